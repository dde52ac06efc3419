package bench

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Machine describes where a report was measured, for the JSON output.
type Machine struct {
	Cores      int    `json:"cores"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	GoVersion  string `json:"go_version"`
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	// LoadAvg is the 1-minute load average when the run started (Linux;
	// 0 elsewhere): a shared machine's numbers move with it.
	LoadAvg float64 `json:"load_avg_1m,omitempty"`
	// Date is when the run started, RFC 3339 in UTC.
	Date string `json:"date"`
}

// machineInfo describes this machine now.
func machineInfo() Machine {
	m := Machine{
		Cores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(),
		OS: runtime.GOOS, Arch: runtime.GOARCH, Date: time.Now().UTC().Format(time.RFC3339),
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			m.LoadAvg, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	return m
}

// formatValue formats a measurement for the table: rates and counts
// without decimals, milliseconds and MiB with enough to read small ones.
func formatValue(v float64, unit string) string {
	switch {
	case unit == "ms" && v < 10:
		return fmt.Sprintf("%.2f", v)
	case unit == "ms" || unit == "MiB":
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// formatValues formats several measurements of one unit, " / " apart.
func formatValues(vs []float64, unit string) string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = formatValue(v, unit)
	}
	return strings.Join(parts, " / ")
}

// formatExtra formats a result's settings as "k=v" pairs, in key order.
func formatExtra(extra map[string]float64) string {
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.FormatFloat(extra[k], 'f', -1, 64)
		if strings.HasPrefix(k, "load_") {
			parts[i] = fmt.Sprintf("%s=%.1f", k, extra[k])
		}
	}
	return strings.Join(parts, " ")
}
