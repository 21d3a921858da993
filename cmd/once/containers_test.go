package main

import (
	"testing"

	"github.com/oncetool/once/container"
)

func TestContainerSelectMatches(t *testing.T) {
	web := container.Info{ContainerID: "3a4b5c6d7e8f90123a4b5c6d7e8f90123a4b5c6d7e8f90123a4b5c6d7e8f9012",
		ContainerName: "web", PodName: "shop-7d9f", PodNamespace: "prod"}
	host := container.Info{}
	for _, tc := range []struct {
		name                         string
		containers, pods, namespaces stringList
		info                         container.Info
		want                         bool
	}{
		{"by name", stringList{"web"}, nil, nil, web, true},
		{"by id prefix", stringList{"3a4b5c6d7e8f"}, nil, nil, web, true},
		{"id prefix too short", stringList{"3a4"}, nil, nil, web, false},
		{"other name", stringList{"db"}, nil, nil, web, false},
		{"any of several", stringList{"db", "web"}, nil, nil, web, true},
		{"pod", nil, stringList{"shop-7d9f"}, nil, web, true},
		{"namespace", nil, nil, stringList{"prod"}, web, true},
		{"pod and namespace must both match", nil, stringList{"shop-7d9f"}, stringList{"dev"}, web, false},
		{"the host is no container", stringList{"web"}, nil, nil, host, false},
		{"an empty name matches no host process", nil, nil, stringList{"prod"}, host, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := containerSelect{containers: tc.containers, pods: tc.pods, namespaces: tc.namespaces}
			if got := c.matches(tc.info); got != tc.want {
				t.Errorf("matches = %v, want %v", got, tc.want)
			}
		})
	}
}
