//go:build unix

package fleet_test

import (
	"syscall"
	"time"
)

// cpuTime is the process's user plus system CPU time (pods and load generator together).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
