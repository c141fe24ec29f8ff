//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// reaperArg0 is argv[0] of the agent binary run as a handler program's
// reaper (underReaper): the program's path and its argv follow it.
const reaperArg0 = "ampagent handler-reaper"

// selfExe is the agent's own binary, by the file it was started from: a
// file put at the agent's path since it started is not run (CLI-38).
const selfExe = "/proc/self/exe"

// init runs the binary as a reaper when it was started as one
// (underReaper), before any command is parsed: the agent's own binary and
// the package's test binary alike.
func init() {
	if len(os.Args) >= 3 && os.Args[0] == reaperArg0 {
		// syscall.Exit, not os.Exit: the reaper has nothing to flush, and
		// a race-instrumented binary's os.Exit(0) sleeps a second for
		// late reports, which every invocation would wait for.
		syscall.Exit(runReaper(os.Args[1], os.Args[2:]))
	}
}

// underReaper makes cmd (a handler program, its group set up by
// confineProgram) start the agent's own binary as the program's reaper
// (runReaper): a child subreaper (prctl PR_SET_CHILD_SUBREAPER) that runs
// the program, with the same stdin, stdout, stderr, working directory and
// environment, and once the program exited or the reaper was told to stop
// (SIGTERM, cmd.Cancel: the deadline, a cancel, an output over its cap),
// kills every process the program started, those that left its process
// group and session (setsid, setpgid, a double fork) included, since each
// is re-parented to the reaper when its parent dies, and reaps them all
// before it exits (CLI-40). The reaper is the group's leader; the group
// kill after its exit (runInGroup) stays as a second net. It reports
// true: cmd.Cancel is the reaper's, confineProgram's group kill is not
// installed.
func underReaper(cmd *exec.Cmd) bool {
	cmd.Args = append([]string{reaperArg0, cmd.Path}, cmd.Args...)
	cmd.Path = selfExe
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		// Not SIGKILL: a reaper killed would leave the escaped processes
		// to init. If it does not exit, os/exec kills it after WaitDelay.
		// SIGCONT after it: a reaper the program stopped (SIGSTOP, which
		// no process can catch) would take the SIGTERM only once
		// resumed, and be killed at WaitDelay instead (review 115).
		err := cmd.Process.Signal(syscall.SIGTERM)
		cmd.Process.Signal(syscall.SIGCONT)
		return err
	}
	return true
}

// reaperKilled reports whether err, the end of a program run under its
// reaper (underReaper), says the reaper itself died by a signal: it exits
// by its own call otherwise, with its program's code. Only a SIGKILL (the
// program's or another process's of the agent's user, or os/exec's after
// WaitDelay) or a stop that outlasted the deadline does that; what the
// program started may then run on, re-parented to init, and the agent
// says so in its log (review 115).
func reaperKilled(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}

// runReaper runs the program at path with argv as the reaper of all it
// starts (underReaper) and returns the exit code to report: the program's,
// 128 plus the signal that killed it, 126 when it could not start, or
// abandonedCode when the program exited 0 but not all it started could be
// killed and reaped (the reason on stderr, which the agent logs for a
// failed program).
func runReaper(path string, argv []string) int {
	// Every signal on which Go's runtime would end the reaper (SIGHUP,
	// SIGINT, SIGTERM; SIGQUIT, SIGABRT, SIGTRAP, SIGSYS, SIGSTKFLT with a
	// stack dump; SIGSEGV, SIGBUS, SIGFPE, SIGILL sent by another process,
	// a crash) stops it as SIGTERM does: it kills and reaps all the
	// program started before it exits. A reaper that died on one, sent
	// by the program (kill -QUIT $PPID), left the processes that had left
	// the group to init (review 115). The terminal's stop signals
	// (SIGTSTP, SIGTTIN, SIGTTOU), which would stop it, are caught and
	// dropped: caught, not ignored, since an ignored signal stays ignored
	// in the program it starts.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, append([]os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP,
		syscall.SIGQUIT, syscall.SIGABRT, syscall.SIGTRAP, syscall.SIGSYS,
		// Sent by another process, these end a Go program that did not
		// ask for them with a crash and exit status 2, which the agent
		// cannot tell from a failed program (last read).
		syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGILL}, stackFaultSignal()...)...)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "ampagent: cannot reap the handler program's processes: %v\n", err)
		return 126
	}
	if err := closeOnExecAll(); err != nil {
		fmt.Fprintf(os.Stderr, "ampagent: cannot keep the agent's descriptors from the handler program: %v\n", err)
		return 126
	}
	cmd := &exec.Cmd{Path: path, Args: argv, Stdin: os.Stdin, Stdout: os.Stdout}
	return superviseProgram(cmd, stop, systemReapOps(), os.Stderr)
}

// superviseProgram runs cmd until it exits or stop says to end it, then
// kills and reaps all it started (killAdopted, with ops), and returns the
// code runReaper reports. errOut is the reaper's stderr: the program's
// stderr goes through a pipe of the reaper's, kept (keepStderr) and
// written to errOut after what the reaper has to say. The agent logs the
// first maxLoggedStderr bytes of it for a failed program: a note written
// after the program's own stderr, which the program had shared, was
// pushed out of that line by 4 KiB of the program's text (CLI-69).
func superviseProgram(cmd *exec.Cmd, stop <-chan os.Signal, ops reapOps, errOut io.Writer) int {
	pr, pw, err := os.Pipe()
	if err != nil {
		fmt.Fprintf(errOut, "ampagent: the handler program cannot start: %v\n", err)
		return 126
	}
	defer pr.Close()
	cmd.Stderr = pw
	err = cmd.Start()
	pw.Close() // the program's and its children's copies are the writers
	if err != nil {
		fmt.Fprintf(errOut, "ampagent: the handler program cannot start: %v\n", err)
		return 126
	}
	kept := make(chan []byte, 1)
	go func() { kept <- keepStderr(pr) }()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-stop:
		cmd.Process.Kill()
		err = <-done
	}
	code := exitCode(err)
	kerr := killAdopted(ops)
	// Every writer is dead unless a child could not be killed, or one
	// handed the pipe to a process outside the program's tree.
	pr.SetReadDeadline(time.Now().Add(stderrGrace))
	programErr := <-kept
	if kerr != nil {
		// First, so that the program's stderr cannot push it out of the
		// agent's log line; and a result whose program left processes
		// running is not answered as a success (CLI-48).
		fmt.Fprintf(errOut, "ampagent: processes the handler program started may be left running: %v\n", kerr)
		if code == 0 {
			code = abandonedCode
		}
	}
	errOut.Write(programErr)
	return code
}

// stderrGrace is how long the reaper reads the program's stderr once all
// it started was killed and reaped (or given up on): under os/exec's
// WaitDelay (2 s) with reapLimit (1.5 s), so that a reaper told to stop
// still exits by itself. With every writer dead the end of the pipe comes
// at once and the grace costs nothing; it is as long as that bound allows
// because a read past it is refused even with bytes left in the pipe (a
// reading goroutine descheduled on a loaded machine would lose them).
const stderrGrace = 400 * time.Millisecond

// keepStderr reads r to its end (or its deadline) and returns its first
// maxProgramStderr bytes, as much as the agent keeps of a program's
// stderr; the rest is read and dropped, so that the program never blocks
// on a full pipe.
func keepStderr(r io.Reader) []byte {
	b, _ := io.ReadAll(io.LimitReader(r, maxProgramStderr))
	io.Copy(io.Discard, r)
	return b
}

// closeOnExecAll marks every descriptor of the reaper above stderr
// close-on-exec, so that the program gets its stdin, stdout and stderr
// alone. Go's os/exec passes on every descriptor without the flag, and
// the agent may hold some it did not open (its parent's: a shell's
// "3<key.pem", a supervisor's socket, a /dev/fd/N named on its command
// line), which reach the reaper as they reach any child (CLI-67).
// close_range(CLOSE_RANGE_CLOEXEC) where the kernel has it (Linux 5.11),
// else each descriptor /proc/self/fd lists; neither: an error, and the
// program is not started.
func closeOnExecAll() error {
	return closeOnExecWith(func() error { return unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC) }, "/proc/self/fd")
}

// closeOnExecWith is closeOnExecAll with its close_range call and its
// listing of the process's descriptors given: a test forces the fallback
// through the listing, which kernels before 5.11, and seccomp filters
// that refuse close_range, take (CLI-71).
func closeOnExecWith(closeRange func() error, fdDir string) error {
	if closeRange() == nil {
		return nil
	}
	ents, err := os.ReadDir(fdDir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil || fd <= 2 {
			continue
		}
		// The listing's own descriptor is closed by now (EBADF).
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && !errors.Is(err, unix.EBADF) {
			return err
		}
	}
	return nil
}

// abandonedCode is the reaper's exit code when its program succeeded but
// it could not kill and reap all the program started (killAdopted): the
// invocation fails and the agent logs why (CLI-48).
const abandonedCode = 125

// exitCode is the code a reaper reports for its program's end.
func exitCode(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return 126
}

// Bounds of killAdopted's wait for children that do not die at once: the
// pause between two rounds that reaped nothing and found no new child
// doubles from reapPauseMin to reapPauseMax, and after reapPatience of
// such rounds the reaper gives up. reapPatience is under os/exec's
// WaitDelay (2 s), so that a reaper told to stop at the deadline still
// exits by itself and says what it left (CLI-48).
//
// reapLimit bounds the whole of killAdopted whatever its progress: a
// chain of processes each forking once more before its kill lands shows
// a new child every round, and would otherwise keep the reaper, and the
// invocation's slot, until os/exec kills the reaper at the deadline's
// grace, leaving the chain to init (CLI-48, amended).
const (
	reapPauseMin = time.Millisecond
	reapPauseMax = 100 * time.Millisecond
	reapPatience = time.Second
	reapLimit    = 1500 * time.Millisecond
)

// reapOps are the system calls and the clock killAdopted uses
// (systemReapOps; a test's fakes).
type reapOps struct {
	// reap reaps one exited child without waiting: its pid, 0 when
	// children are left and none has exited, ECHILD when none is left.
	reap func() (int, error)
	// children lists the reaper's children (from /proc).
	children func() ([]int, error)
	// isChild reports whether pid is still the reaper's child, unreaped
	// (waitid WNOWAIT): a pid /proc named that is another process's in
	// the reaper's PID namespace is never killed.
	isChild func(pid int) bool
	// kill sends SIGKILL to pid.
	kill  func(pid int)
	now   func() time.Time
	sleep func(time.Duration)
}

// systemReapOps are the reaper's own reapOps.
func systemReapOps() reapOps {
	self := os.Getpid()
	return reapOps{
		reap: func() (int, error) {
			for {
				var ws unix.WaitStatus
				pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
				if !errors.Is(err, unix.EINTR) {
					return pid, err
				}
			}
		},
		children: func() ([]int, error) { return childrenOf(self) },
		isChild: func(pid int) bool {
			for {
				var info unix.Siginfo
				err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
				if !errors.Is(err, unix.EINTR) {
					return err == nil
				}
			}
		},
		kill:  func(pid int) { unix.Kill(pid, unix.SIGKILL) },
		now:   time.Now,
		sleep: time.Sleep,
	}
}

// abandonedError says which children killAdopted gave up on: killed,
// they did not die within reapPatience (uninterruptible sleep, a hung
// file system), or the kill was refused, or wait4 says children are left
// that /proc does not show as the reaper's (a /proc of another PID
// namespace).
type abandonedError struct {
	pids    []int
	unknown bool          // children left that no listing found
	limit   time.Duration // reapLimit when the whole bound ended it, else 0
}

func (e *abandonedError) Error() string {
	var b strings.Builder
	if e.limit > 0 {
		fmt.Fprintf(&b, "gave up after %s in all, children still appearing", e.limit)
	} else {
		fmt.Fprintf(&b, "gave up after %s", reapPatience)
	}
	if len(e.pids) > 0 {
		fmt.Fprintf(&b, " on %d killed processes that did not end (pids", len(e.pids))
		for _, pid := range e.pids {
			fmt.Fprintf(&b, " %d", pid)
		}
		b.WriteString(")")
	}
	if e.unknown {
		b.WriteString(" on children /proc does not list")
	}
	return b.String()
}

// killAdopted kills and reaps every child of the reaper: what the program
// left, and, as each dies, the processes re-parented to the reaper in its
// place, until no child is left (reap answers ECHILD: the kernel's word
// that none is). A child is killed by its pid, never by a group (a
// program's process may have joined the agent's own group), and only
// while ops.isChild says it is the reaper's unreaped child: a pid is the
// reaper's child's until the reaper reaps it, which it does only after
// the kills of a round, so no kill reaches another process. Rounds that
// reap nothing and find no new child are paced (reapPauseMin doubling to
// reapPauseMax) and, after reapPatience of them, or reapLimit in all, it
// gives up (*abandonedError): a child that cannot die at once (uninterruptible
// sleep) or that /proc does not show made it read /proc and kill again
// without pause, a core busy until the deadline (CLI-48). It fails
// without /proc, where the children cannot be listed.
func killAdopted(ops reapOps) error {
	seen := map[int]bool{}
	pause := reapPauseMin
	start := ops.now()
	last := start
	for {
		progress := false
		for {
			pid, err := ops.reap()
			switch {
			case errors.Is(err, unix.ECHILD):
				return nil
			case err != nil:
				return err
			}
			if pid <= 0 {
				break // children left, alive
			}
			progress = true
			// Orphans that exit as fast as they are reaped (chains that
			// fork and exit) would keep this loop from ever killing:
			// the whole bound holds here too.
			if ops.now().Sub(start) >= reapLimit {
				return &abandonedError{limit: reapLimit}
			}
		}
		pids, err := ops.children()
		if err != nil {
			return err
		}
		var left []int
		for _, pid := range pids {
			if !ops.isChild(pid) {
				continue
			}
			ops.kill(pid)
			left = append(left, pid)
			if !seen[pid] {
				seen[pid], progress = true, true
			}
		}
		switch {
		case ops.now().Sub(start) >= reapLimit:
			return &abandonedError{pids: left, unknown: len(left) == 0, limit: reapLimit}
		case progress:
			last, pause = ops.now(), reapPauseMin
		case ops.now().Sub(last) >= reapPatience:
			return &abandonedError{pids: left, unknown: len(left) == 0}
		default:
			pause = min(2*pause, reapPauseMax)
		}
		// Also when nothing was listed: a child re-parented while /proc
		// was read is found by the next round.
		ops.sleep(pause)
	}
}

// childrenOf lists the processes whose parent is ppid, from /proc.
func childrenOf(ppid int) ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone
		}
		if parentOf(stat) == ppid {
			out = append(out, pid)
		}
	}
	return out, nil
}

// parentOf is the parent pid in a /proc/PID/stat line ("pid (comm) S
// ppid ..."; comm may hold spaces and parentheses: the fields are after
// the last ')'), or -1.
func parentOf(stat []byte) int {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return -1
	}
	f := bytes.Fields(stat[i+1:])
	if len(f) < 2 {
		return -1
	}
	ppid, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return -1
	}
	return ppid
}
