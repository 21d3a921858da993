package report

import "github.com/oncetool/once/trace"

// jsonContainer is who a process is in a fleet: its container and pod as
// the node's runtime names them, "" where unknown or outside any. Every
// JSON output that shows a process carries these, after its cgroup_id.
type jsonContainer struct {
	Cgroup        jstr `json:"cgroup"`
	ContainerID   jstr `json:"container_id"`
	ContainerName jstr `json:"container_name"`
	Pod           jstr `json:"pod"`
	Namespace     jstr `json:"namespace"`
	Runtime       jstr `json:"runtime"`
}

func containerOf(p *trace.Process) jsonContainer {
	if p == nil || p.Container == nil {
		return jsonContainer{}
	}
	c := p.Container
	return jsonContainer{Cgroup: jstr(c.Cgroup), ContainerID: jstr(c.ID), ContainerName: jstr(c.Name),
		Pod: jstr(c.Pod), Namespace: jstr(c.Namespace), Runtime: jstr(c.Runtime)}
}

// appendContainer appends jsonContainer's fields to a JSON object written
// by hand (the open lines), in its order.
func appendContainer(b []byte, p *trace.Process) []byte {
	var c trace.Container
	if p != nil && p.Container != nil {
		c = *p.Container
	}
	b = appendJSONString(appendKey(b, "cgroup"), c.Cgroup)
	b = appendJSONString(appendKey(b, "container_id"), c.ID)
	b = appendJSONString(appendKey(b, "container_name"), c.Name)
	b = appendJSONString(appendKey(b, "pod"), c.Pod)
	b = appendJSONString(appendKey(b, "namespace"), c.Namespace)
	return appendJSONString(appendKey(b, "runtime"), c.Runtime)
}

// containerLabel is a process's container for a text line: the pod's
// namespace/name and the container's name, or its short id.
func containerLabel(c *trace.Container) string {
	if c == nil {
		return ""
	}
	name := c.Name
	if name == "" {
		name = c.ShortID()
	}
	if c.Pod != "" {
		pod := c.Pod
		if c.Namespace != "" {
			pod = c.Namespace + "/" + pod
		}
		if name != "" {
			return pod + "/" + name
		}
		return pod
	}
	return name
}
