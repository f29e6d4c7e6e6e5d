//go:build !linux

package harness

import "syscall"

// childAttr puts a child in its own process group, so Stop can kill the group. Without Linux's
// parent-death signal, a parent killed with SIGKILL leaves its children running.
func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
