package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is USER_HZ, the unit of /proc/<pid>/stat's CPU times.
const clockTick = 100

// selfCPU is this process's user and system CPU time so far (Linux).
func selfCPU() time.Duration { return pidCPU(os.Getpid()) }

// processesCPU is the CPU time of pids together; -1 when there are none.
func processesCPU(pids []int) time.Duration {
	if len(pids) == 0 {
		return -1
	}
	var t time.Duration
	for _, pid := range pids {
		t += max(pidCPU(pid), 0)
	}
	return t
}

// pidCPU is a process's user and system CPU time, read from
// /proc/<pid>/stat; -1 when it cannot be read.
func pidCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	// The command name is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(b)[i+1:])
	if len(f) < 13 {
		return -1
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return -1
	}
	return time.Duration(utime+stime) * time.Second / clockTick
}
