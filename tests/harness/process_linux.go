package harness

import "syscall"

// childAttr puts a child in its own process group (so Stop can kill the group) and asks the
// kernel to send it SIGTERM when the parent dies, however it dies. The kernel sends the signal
// when the thread that started the child exits; Go's runtime ends threads only when a goroutine
// that locked one exits without unlocking, which this package never does.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
