package buildinfo

import (
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestFromBuildInfo(t *testing.T) {
	installed := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: ModulePath, Version: "v0.1.0"}}
	assert.Equal(t, Info{Version: "v0.1.0", GoVersion: "go1.26.0"}, FromBuildInfo(installed))

	checkout := &debug.BuildInfo{Main: debug.Module{Path: ModulePath, Version: Devel}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-11-27T20:58:00Z"}, {Key: "vcs.modified", Value: "true"},
	}}
	got := FromBuildInfo(checkout)
	assert.Equal(t, "0123456789abcdef0123", got.Revision)
	assert.Equal(t, time.Date(2026, 11, 27, 20, 58, 0, 0, time.UTC), got.Time)
	assert.True(t, got.Modified)
	assert.Equal(t, "(devel) 0123456789ab+modified", got.String())

	pseudo := &debug.BuildInfo{Main: debug.Module{Path: ModulePath, Version: "v0.0.0-20261127205800-0123456789ab+dirty"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}
	assert.Equal(t, "v0.0.0-20261127205800-0123456789ab+dirty", FromBuildInfo(pseudo).String())

	// An application's binary lists this module among its dependencies;
	// the application's own VCS settings are not this module's.
	app := &debug.BuildInfo{Main: debug.Module{Path: "example.com/app", Version: Devel},
		Deps:     []*debug.Module{{Path: "example.com/other", Version: "v1.0.0"}, {Path: ModulePath, Version: "v0.2.0"}},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "ffff"}}}
	assert.Equal(t, Info{Version: "v0.2.0", GoVersion: FromBuildInfo(nil).GoVersion}, FromBuildInfo(app))

	assert.Equal(t, Devel, FromBuildInfo(nil).Version)
}

func TestOverride(t *testing.T) {
	bi := &debug.BuildInfo{Main: debug.Module{Path: ModulePath, Version: "v0.1.0"}}
	old := Version
	t.Cleanup(func() { Version = old; SetVersion("") })
	Version = "v9.9.9-linked"
	assert.Equal(t, "v9.9.9-linked", FromBuildInfo(bi).Version)
	SetVersion("v1.2.3")
	assert.Equal(t, "v1.2.3", FromBuildInfo(bi).Version)
	SetVersion("")
	assert.Equal(t, "v9.9.9-linked", FromBuildInfo(bi).Version)
}
