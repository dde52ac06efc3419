//go:build chaos && !linux

package chaos

import "os/exec"

func detach(*exec.Cmd) {}

func killGroup(int) {}

// supported is false: the suite signals process groups and relies on the
// kernel killing children with their parent, which it does on Linux only.
const supported = false
