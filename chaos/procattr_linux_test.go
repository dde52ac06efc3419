//go:build chaos

package chaos

import (
	"os/exec"
	"syscall"
)

// detach puts a child process in its own process group, so a signal to
// the group reaches it and anything it started, and has the kernel kill it
// when the test process dies, so no child outlives an aborted run.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup sends SIGKILL to the process group led by pid.
func killGroup(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}

const supported = true
