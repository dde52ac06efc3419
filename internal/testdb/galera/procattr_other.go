//go:build !linux

package galera

import "os/exec"

// detach does nothing off Linux: a server may outlive an aborted run.
func detach(*exec.Cmd) {}

// killGroup does nothing off Linux.
func killGroup(int) {}
