package pgproc

import (
	"os/exec"
	"syscall"
)

// attr puts the server in its own process group, has the kernel kill it
// when the test process dies, and runs it as the postgres account when
// the test runs as root.
func (s *Server) attr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: s.cred}
}
