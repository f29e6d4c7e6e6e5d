package leastconn

import "github.com/switchyard-dev/switchyard/cluster-gateway/internal/framework"

// Held returns how many endpoints p holds state for.
func Held(p framework.Picker) int {
	pk := p.(*Picker)
	pk.mu.Lock()
	defer pk.mu.Unlock()
	return pk.pods.Len()
}
