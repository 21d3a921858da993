package main

import (
	"github.com/oncetool/once/container"
	"github.com/oncetool/once/trace"
)

// containerLabels names the container of each process from the node's
// cgroups and its runtimes' state (container.Resolver: no cluster API),
// for the engine's Options.Label.
func containerLabels() func(pid uint32, cgroupID uint64) *trace.Container {
	r := container.New(container.Options{})
	return func(pid uint32, cgroupID uint64) *trace.Container {
		info := r.Observe(pid, cgroupID)
		if info.ContainerID == "" && info.PodUID == "" && info.Runtime == "" {
			return nil
		}
		return &trace.Container{Cgroup: info.CgroupPath, Runtime: info.Runtime, ID: info.ContainerID,
			Name: info.ContainerName, Pod: info.PodName, Namespace: info.PodNamespace, PodUID: info.PodUID}
	}
}
