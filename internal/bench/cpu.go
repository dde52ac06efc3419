package bench

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The drain and ceiling scenarios also measure CPU time per job over
// their timed window: this process's (the workers, or the ceiling's
// client) and, when the database server runs on this machine and its
// process can be read from /proc, the server's. On a machine whose cores
// the workers share with the server, a drain's rate is about the cores
// divided by the CPU a job costs both; these figures say where it goes.

// cpuMeter measures one run's timed window. A scenario calls start when
// its clock starts and stop(units) when it stops; runOnce hands the meter
// in through the context and reads it afterwards.
type cpuMeter struct {
	server            serverCPU // nil: the server's CPU is not measured
	self0             time.Duration
	server0           cpuTimes
	selfUS, serverUS  float64 // µs per unit over the window; < 0 when not measured
	started, measured bool
}

type cpuMeterKey struct{}

func withMeter(ctx context.Context, m *cpuMeter) context.Context {
	return context.WithValue(ctx, cpuMeterKey{}, m)
}

func meterFrom(ctx context.Context) *cpuMeter {
	m, _ := ctx.Value(cpuMeterKey{}).(*cpuMeter)
	return m
}

// start notes the CPU times at the start of the timed window.
func (m *cpuMeter) start() {
	if m == nil {
		return
	}
	m.started = true
	m.self0 = selfCPU()
	if m.server != nil {
		m.server0 = m.server()
	}
}

// stop divides the CPU used since start by units.
func (m *cpuMeter) stop(units float64) {
	if m == nil || !m.started || units <= 0 {
		return
	}
	m.measured = true
	m.selfUS = float64((selfCPU() - m.self0).Microseconds()) / units
	m.serverUS = -1
	if m.server != nil && m.server0.total() > 0 {
		m.serverUS = float64(m.server().since(m.server0).Microseconds()) / units
	}
}

// serverCPU reads the CPU time the database server's processes have used
// so far, by process; empty when they cannot be read.
type serverCPU func() cpuTimes

// cpuTimes is the CPU time of a set of processes, by pid.
type cpuTimes map[int]time.Duration

// total is the CPU time of all the processes together.
func (c cpuTimes) total() time.Duration {
	var t time.Duration
	for _, d := range c {
		t += d
	}
	return t
}

// since is the CPU time the processes of c used after the reading before:
// a process in both adds what it used between them, one that started
// since (or whose pid was reused: its time fell) adds all of its time,
// and one that has exited adds nothing. So another client's connection
// to PostgreSQL that ends during a window leaves the window's figure a
// lower bound instead of making it fall below zero.
func (c cpuTimes) since(before cpuTimes) time.Duration {
	var t time.Duration
	for pid, d := range c {
		if b, ok := before[pid]; ok && d >= b {
			t += d - b
		} else {
			t += d
		}
	}
	return t
}

// serverCPUEnv is an Env that can read its server's CPU time: nil when
// the server does not run on this machine.
type serverCPUEnv interface {
	ServerCPU(ctx context.Context) serverCPU
}

// selfCPU is this process's user and system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's CPU times: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// processCPU is the user and system CPU time of process pid from
// /proc/<pid>/stat; 0 when it cannot be read.
func processCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces; the fields after it
	// start past its closing parenthesis.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 { // utime and stime are fields 14 and 15, 12 and 13 here
		return 0
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(ut+st) * time.Second / clockTicks
}

// processesCPU is the CPU time of each process named comm on this
// machine: PostgreSQL runs a process a connection, so its server's CPU is
// that of every postgres process. A process that exits during a window
// takes its time with it, so a window's figure is a lower bound; a pooled
// drain keeps its connections.
func processesCPU(comm string) cpuTimes {
	dirs, _ := filepath.Glob("/proc/[0-9]*/comm")
	t := cpuTimes{}
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil || strings.TrimSpace(string(b)) != comm {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(d))); err == nil {
			t[pid] = processCPU(pid)
		}
	}
	return t
}

// localServerPID returns the pid of the MySQL or MariaDB server db talks
// to when it runs on this machine and /proc shows it; 0 otherwise. The
// server names its pid file; the process behind that pid must be a
// mysqld or mariadbd.
func localServerPID(ctx context.Context, db *sql.DB) int {
	var file string
	if err := db.QueryRowContext(ctx, "SELECT @@pid_file").Scan(&file); err != nil {
		return 0
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	comm, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm"))
	if err != nil {
		return 0
	}
	switch strings.TrimSpace(string(comm)) {
	case "mariadbd", "mysqld":
		return pid
	}
	return 0
}
