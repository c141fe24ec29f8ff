//go:build linux

package etcdtest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the CPU times in /proc/PID/stat (USER_HZ, 100 on
// every Linux architecture).
const userHZ = 100

// procCPU is the user and system CPU time pid has used, from
// /proc/PID/stat (ok false when it cannot be read).
func procCPU(pid string) (time.Duration, bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold spaces
	if i < 0 || i+2 > len(s) {
		return 0, false
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(u+st) * time.Second / userHZ, true
}

// CPU is the CPU time (user and system) the running members have used
// since they started; ok is false where it cannot be read. A benchmark
// reads it before and after its timed part to split the machine's CPU
// between the members and itself (SelfCPU).
func (c *Cluster) CPU() (d time.Duration, ok bool) {
	for _, m := range c.Members {
		if m.cmd == nil {
			continue
		}
		t, ok := procCPU(fmt.Sprint(m.cmd.Process.Pid))
		if !ok {
			return 0, false
		}
		d += t
	}
	return d, true
}

// SelfCPU is the CPU time (user and system) of this process.
func SelfCPU() (time.Duration, bool) { return procCPU("self") }
