// Package buildinfo says which version of this module a binary runs: the
// version set at link time, else the one the Go toolchain recorded in the
// binary's build information, with the VCS revision and time when the
// binary was built from a checkout of this module.
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"
)

// ModulePath is this module's path.
const ModulePath = "github.com/queuety/queuety-go"

// Devel is the version of a build that has none: built inside a checkout
// without VCS information, or with go run.
const Devel = "(devel)"

// Version, when set with -ldflags "-X
// github.com/queuety/queuety-go/internal/buildinfo.Version=v1.2.3",
// overrides the version the build information gives.
var Version = ""

// override is the version SetVersion set, read before Version.
var override atomic.Pointer[string]

// SetVersion overrides the version for the rest of the process (the CLI
// passes on its own link-time variable with it). An empty v removes the
// override.
func SetVersion(v string) {
	if v == "" {
		override.Store(nil)
		return
	}
	override.Store(&v)
}

// Info is what a binary knows of its build.
type Info struct {
	// Version is the module's version: the link-time override, the module
	// version (v0.1.0 for a binary installed with go install
	// ...@v0.1.0, or a pseudo-version), or Devel.
	Version string
	// Revision and Time are the VCS commit and commit time the binary was
	// built from, when it was built from a checkout of this module (empty
	// and zero otherwise). Modified says the checkout had local changes.
	Revision string
	Time     time.Time
	Modified bool
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string
}

// Read returns the build's Info.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	return FromBuildInfo(bi)
}

// FromBuildInfo returns the Info bi describes (bi may be nil), with the
// overrides applied.
func FromBuildInfo(bi *debug.BuildInfo) Info {
	info := Info{Version: Devel, GoVersion: runtime.Version()}
	if bi != nil {
		if bi.GoVersion != "" {
			info.GoVersion = bi.GoVersion
		}
		if m := module(bi); m != nil && m.Version != "" {
			info.Version = m.Version
		}
		if bi.Main.Path == ModulePath {
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					info.Revision = s.Value
				case "vcs.time":
					info.Time, _ = time.Parse(time.RFC3339, s.Value)
				case "vcs.modified":
					info.Modified = s.Value == "true"
				}
			}
		}
	}
	if p := override.Load(); p != nil {
		info.Version = *p
	} else if Version != "" {
		info.Version = Version
	}
	return info
}

// module returns this module as bi lists it: the main module, or one of
// the dependencies of an application's binary (its replacement when it is
// replaced by another version).
func module(bi *debug.BuildInfo) *debug.Module {
	if bi.Main.Path == ModulePath {
		return &bi.Main
	}
	for _, d := range bi.Deps {
		if d.Path != ModulePath {
			continue
		}
		if d.Replace != nil && d.Replace.Version != "" {
			return d.Replace
		}
		return d
	}
	return nil
}

// String is the version, followed by the revision when the version does
// not name it already: "v0.1.0", "(devel) 0123456789ab+modified",
// "v0.0.0-20261127205800-0123456789ab+dirty".
func (i Info) String() string {
	if i.Revision == "" || strings.Contains(i.Version, shortRev(i.Revision)) {
		return i.Version
	}
	s := i.Version + " " + shortRev(i.Revision)
	if i.Modified {
		s += "+modified"
	}
	return s
}

func shortRev(r string) string { return r[:min(len(r), 12)] }
