package kvevents

import (
	"net"
	"strings"
)

// parseTopic returns the pod named by a topic prefix<pod>@<model> (llm-d's kv@<pod-ip>@<model>):
// an IP, or IP:port when several endpoints share an IP. ok is false for any other shape.
func parseTopic(topic []byte, prefix string) (pod string, ok bool) {
	if len(topic) > 512 || !strings.HasPrefix(string(topic), prefix) {
		return "", false
	}
	rest := topic[len(prefix):]
	end := len(rest)
	// An IPv6 address with a port is bracketed; the pod ends at the first '@' after it.
	from := 0
	if len(rest) > 0 && rest[0] == '[' {
		if i := strings.IndexByte(string(rest), ']'); i > 0 {
			from = i
		}
	}
	if i := strings.IndexByte(string(rest[from:]), '@'); i >= 0 {
		end = from + i
	}
	if end == 0 {
		return "", false
	}
	return string(rest[:end]), true
}

// resolver maps the pod of a topic to an endpoint address: exactly, or by IP when one endpoint
// has it.
type resolver struct {
	addrs map[string]struct{}
	byIP  map[string]string // "" when several endpoints share the IP
}

func newResolver(addrs []string) *resolver {
	r := &resolver{addrs: make(map[string]struct{}, len(addrs)), byIP: make(map[string]string, len(addrs))}
	for _, a := range addrs {
		r.addrs[a] = struct{}{}
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			continue
		}
		if _, dup := r.byIP[host]; dup {
			r.byIP[host] = ""
		} else {
			r.byIP[host] = a
		}
	}
	return r
}

func (r *resolver) resolve(pod string) (string, bool) {
	if _, _, err := net.SplitHostPort(pod); err == nil {
		_, ok := r.addrs[pod]
		return pod, ok
	}
	a, ok := r.byIP[strings.Trim(pod, "[]")]
	return a, ok && a != ""
}

func (r *resolver) remove(addr string) {
	delete(r.addrs, addr)
	if host, _, err := net.SplitHostPort(addr); err == nil && r.byIP[host] == addr {
		delete(r.byIP, host)
	}
}
