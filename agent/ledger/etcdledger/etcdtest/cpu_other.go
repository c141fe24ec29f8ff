//go:build !linux

package etcdtest

import "time"

// CPU is not measured off Linux: ok is false.
func (c *Cluster) CPU() (time.Duration, bool) { return 0, false }

// SelfCPU is not measured off Linux: ok is false.
func SelfCPU() (time.Duration, bool) { return 0, false }
