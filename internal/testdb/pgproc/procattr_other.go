//go:build !linux

package pgproc

import "os/exec"

// attr does nothing off Linux: the server may outlive an aborted run.
func (s *Server) attr(*exec.Cmd) {}
