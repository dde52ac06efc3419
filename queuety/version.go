package queuety

import "github.com/queuety/queuety-go/internal/buildinfo"

// Version returns the version of this module the running program was
// built with: the version set at link time (-ldflags "-X
// github.com/queuety/queuety-go/cli.Version=v1.2.3" in a program run
// through package cli), else the module version the Go toolchain recorded
// (v0.1.0 for a binary installed with go install ...@v0.1.0, a
// pseudo-version for a checkout), else "(devel)"; followed by the VCS
// revision when the version does not name it. Workers report it in the
// worker registry.
func Version() string { return buildinfo.Read().String() }
