package mariadbproc

import (
	"os/exec"
	"syscall"
)

// Detach puts a child process in its own process group, so a signal to
// the group reaches it and anything it starts (state-transfer scripts),
// and has the kernel kill it when the test process dies (a test timeout),
// so no child outlives an aborted run.
func Detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// KillGroup sends SIGKILL to the process group led by pid.
func KillGroup(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}
