//go:build !linux

package mariadbproc

import "os/exec"

// Detach does nothing off Linux: a child may outlive an aborted run.
func Detach(*exec.Cmd) {}

// KillGroup does nothing off Linux.
func KillGroup(int) {}
