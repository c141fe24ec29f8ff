package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
	"golang.org/x/sys/unix"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/cliutil"
)

// TestHandlerProgramOnAnotherUsersFUSEMountIsRefused: a FUSE file system
// another user mounted (fusermount, with user_allow_other in
// /etc/fuse.conf) answers every stat as its daemon likes: a folder and a
// program of root's, mode 0755, over a folder of that user's in /tmp,
// and the bytes it likes at each read. CLI-70's owner and mode rules
// took the daemon's word, and the program ran (threat: the one file
// system whose owners and modes are another user's say). Now a program,
// or a folder or interpreter on its way, on a FUSE mount neither root
// nor the agent's user made is refused (handler_program_missing; at a
// call, handler_failed without a run), as one whose mounter mountinfo
// does not tell; root's and the agent's user's own FUSE mounts are
// judged as any file system (CLI-73). The daemon is stood in for by the
// mountProbe the config is loaded with (fuseProbe): statfs saying FUSE,
// a mount id and its mountinfo line, the one place the agent learns of
// FUSE (CLI-81).
func TestHandlerProgramOnAnotherUsersFUSEMountIsRefused(t *testing.T) {
	other := strconv.Itoa(os.Geteuid() + 1)
	for _, tc := range []struct {
		name   string
		super  string // the mount's super options in mountinfo
		known  bool   // its line found
		interp bool   // the FUSE mount holds the interpreter, not the program
		refuse bool
	}{
		{"a program on another user's FUSE mount", "rw,user_id=" + other + ",group_id=" + other + ",allow_other", true, false, true},
		{"an interpreter on another user's FUSE mount", "rw,user_id=" + other + ",group_id=" + other + ",allow_other", true, true, true},
		{"a program on a FUSE mount whose mounter is not told", "rw,allow_other", true, false, true},
		{"a program on a FUSE mount whose line is not found", "", false, false, true},
		{"a program on root's FUSE mount", "rw,user_id=0,group_id=0,allow_other", true, false, false},
		{"a program on the agent's user's FUSE mount", "rw,user_id=" + strconv.Itoa(os.Geteuid()) + ",group_id=0", true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			fuse := filepath.Join(base, "fuse")
			hostInfo, err := os.ReadFile("/proc/self/mountinfo")
			if err != nil {
				t.Skipf("no mountinfo to read: %v", err)
			}
			info := string(hostInfo)
			if tc.known {
				info += strconv.FormatUint(fuseMountID, 10) + " 29 0:999 / " + fuse + " rw,nosuid,nodev - fuse.amptest amptest " + tc.super + "\n"
			}
			m := fuseProbe(t, base, fuse, info)
			m.mountID = func(at string) (uint64, bool) {
				if under(at, fuse) {
					return fuseMountID, true
				}
				return statxMountID(at)
			}
			var cmd []string
			if tc.interp {
				in := writeExec(t, filepath.Join(fuse, "interp"), interpreterScript, 0o755)
				cmd = []string{script(t, base, "#!"+in)}
			} else {
				cmd = []string{program(t, base, "fuse", 0o755, 0o755)}
			}
			cfgFile := writeConfig(t, map[string]any{"handlers": map[string]any{"org.example.p:1.0.0": map[string]any{"command": cmd}}})
			_, err = serveConfigProbed(t, m, "--config", cfgFile)
			switch {
			case !tc.refuse && err != nil:
				t.Fatalf("a program on root's or the agent's user's FUSE mount is refused: %v", err)
			case tc.refuse && (amp.NameOf(err) != "handler_program_missing" || !strings.Contains(err.Error(), "is on a FUSE file system")):
				t.Fatalf("serve starts with a program on another user's FUSE mount: %v", err)
			}
			cfg, err := serveConfigProbed(t, m, "--config", cfgFile, "--allow-missing-handlers")
			if err != nil {
				t.Fatal(err)
			}
			out, err := runProgram("org.example.p:1.0.0", cfg.Handlers["org.example.p:1.0.0"], slog.New(slog.DiscardHandler), nil)(context.Background(), map[string]any{})
			switch {
			case !tc.refuse && err != nil:
				t.Fatalf("the program did not run: %v", err)
			case tc.refuse && err == nil:
				t.Fatalf("the program on another user's FUSE mount ran: %v", out)
			case tc.refuse && amp.NameOf(err) != "handler_failed":
				t.Fatalf("the refused program's call: %v, want handler_failed", err)
			}
		})
	}
}

// TestFUSEMountWhoseLineIsHostileIsReadAsItsKernelWroteIt: mountLine
// reads a mount's kind and super options from its mountinfo line, whose
// mount point a user chose (escaped spaces, a " - " look-alike in a
// name is "\040-\040"), and stops at the first line of the id: a FUSE
// mount's super options are what foreignFUSE judges (CLI-73).
func TestFUSEMountWhoseLineIsHostileIsReadAsItsKernelWroteIt(t *testing.T) {
	info := strings.Join([]string{
		`22 1 0:21 / /proc rw,nosuid shared:5 - proc proc rw`,
		`412 29 0:58 / /tmp/x\040-\040tmpfs\040tmpfs\040ro rw,nosuid,nodev,relatime shared:220 - fuse.sshfs me@host:/ rw,user_id=1000,group_id=1000,allow_other`,
		`413 29 0:59 / /mnt/ntfs rw,relatime - fuseblk /dev/sdb1 rw,user_id=0,group_id=0,allow_other,blksize=4096`,
		`414 29 0:60 / /mnt/short rw - fuse`,
	}, "\n")
	for _, tc := range []struct {
		id          uint64
		kind, super string
		ok          bool
	}{
		{412, "fuse.sshfs", "rw,user_id=1000,group_id=1000,allow_other", true},
		{413, "fuseblk", "rw,user_id=0,group_id=0,allow_other,blksize=4096", true},
		{414, "", "", false},
		{41, "", "", false},
	} {
		kind, super, ok := mountLine(strings.NewReader(info), tc.id)
		if kind != tc.kind || super != tc.super || ok != tc.ok {
			t.Errorf("mount %d: %q %q %v, want %q %q %v", tc.id, kind, super, ok, tc.kind, tc.super, tc.ok)
		}
	}
}

// TestHandlerProgramOnFUSEMountOfAKernelWithoutMountIDsIsJudgedByItsDevice:
// Linux before 5.8 (Debian 10's 4.19, Ubuntu 20.04's 5.4) gives no mount
// id (STATX_MNT_ID), so mountOf found no mountinfo line for a FUSE part,
// and every program on any FUSE mount was refused, root's squashfuse and
// ntfs-3g among them, which CLI-73 meant to judge as any file system
// (threat: an honest host refused for its kernel's age). Now the line
// is found by the part's device (lstat's st_dev against MAJ:MIN), each
// line of that device a mount of its one superblock: root's and the
// agent's user's mounts, bound twice too, run, another user's is refused,
// and so is one whose device no line names or whose lines disagree on
// user_id (CLI-73 amended). The FUSE daemon, the older kernel and its
// mountinfo are stood in for by the mountProbe the config is loaded with
// (statfs saying FUSE, no mount id, the test's lines; CLI-81).
func TestHandlerProgramOnFUSEMountOfAKernelWithoutMountIDsIsJudgedByItsDevice(t *testing.T) {
	me, other := strconv.Itoa(os.Geteuid()), strconv.Itoa(os.Geteuid()+1)
	for _, tc := range []struct {
		name  string
		lines []string // DEV stands for the FUSE mount's MAJ:MIN
		why   string   // in the refusal; empty: the program runs
	}{
		{"root's FUSE mount", []string{`512 29 DEV / /srv/img ro,nosuid - fuse.squashfuse squashfuse ro,user_id=0,group_id=0,allow_other`}, ""},
		{"root's fuseblk mount, bound twice", []string{
			`513 29 DEV / /mnt/ntfs rw,relatime - fuseblk /dev/sdb1 rw,user_id=0,group_id=0,allow_other,blksize=4096`,
			`514 29 DEV /h /opt/h rw,relatime - fuseblk /dev/sdb1 rw,user_id=0,group_id=0,allow_other,blksize=4096`,
		}, ""},
		{"the agent's user's FUSE mount", []string{`515 29 DEV / /home/a/m rw - fuse.sshfs a@h:/ rw,user_id=` + me + `,group_id=0`}, ""},
		{"another user's FUSE mount", []string{`516 29 DEV / /tmp/h rw - fuse.sshfs o@h:/ rw,user_id=` + other + `,group_id=` + other + `,allow_other`}, "(uid " + other + ") mounted"},
		{"a FUSE mount whose device no line names", nil, "whose mounter cannot be told"},
		{"a FUSE mount whose lines disagree on user_id", []string{
			`517 29 DEV / /mnt/a rw - fuse.x x rw,user_id=0,group_id=0,allow_other`,
			`518 29 DEV / /tmp/h\040-\040fuse\040x\040rw,user_id=0 rw - fuse.x x rw,user_id=` + other + `,group_id=0,allow_other`,
		}, "whose mounter cannot be told"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			fuse := filepath.Join(base, "fuse")
			cmd := []string{program(t, base, "fuse", 0o755, 0o755)}
			var st unix.Stat_t
			if err := unix.Lstat(fuse, &st); err != nil {
				t.Fatal(err)
			}
			dev := strconv.FormatUint(uint64(unix.Major(st.Dev)), 10) + ":" + strconv.FormatUint(uint64(unix.Minor(st.Dev)), 10)
			info := []string{`22 1 0:21 / /proc rw,nosuid shared:5 - proc proc rw`}
			for _, l := range tc.lines {
				info = append(info, strings.Replace(l, "DEV", dev, 1))
			}
			oldKernel := fuseProbe(t, base, fuse, strings.Join(info, "\n")+"\n")
			oldKernel.mountID = func(string) (uint64, bool) { return 0, false }
			cfgFile := writeConfig(t, map[string]any{"handlers": map[string]any{"org.example.p:1.0.0": map[string]any{"command": cmd}}})
			_, err := serveConfigProbed(t, oldKernel, "--config", cfgFile)
			switch {
			case tc.why == "" && err != nil:
				t.Fatalf("a program on root's or the agent's user's FUSE mount is refused on a kernel without mount ids: %v", err)
			case tc.why != "" && (amp.NameOf(err) != "handler_program_missing" || !strings.Contains(err.Error(), tc.why)):
				t.Fatalf("serve starts with a program on a FUSE mount not told: %v (want %q)", err, tc.why)
			}
			cfg, err := serveConfigProbed(t, oldKernel, "--config", cfgFile, "--allow-missing-handlers")
			if err != nil {
				t.Fatal(err)
			}
			out, err := runProgram("org.example.p:1.0.0", cfg.Handlers["org.example.p:1.0.0"], slog.New(slog.DiscardHandler), nil)(context.Background(), map[string]any{})
			switch {
			case tc.why == "" && err != nil:
				t.Fatalf("the program did not run: %v", err)
			case tc.why != "" && err == nil:
				t.Fatalf("the program on a FUSE mount not told ran: %v", out)
			case tc.why != "" && amp.NameOf(err) != "handler_failed":
				t.Fatalf("the refused program's call: %v, want handler_failed", err)
			}
		})
	}
}

// fuseMountID is the mount id the tests' FUSE mount has (fuseProbe's
// caller), past any a host gives.
const fuseMountID = 1 << 40

// fuseProbe is the host's mountProbe, but for the folder fuse (under
// base) and what lies in it, which statfs says is on a FUSE file system,
// and the mountinfo lines, info (written under base): the FUSE daemon
// and the kernel stood in for, given to the config's loader
// (serveConfigProbed), no package variable swapped (CLI-81).
func fuseProbe(t *testing.T, base, fuse, info string) mountProbe {
	t.Helper()
	infoFile := filepath.Join(base, "mountinfo")
	if err := os.WriteFile(infoFile, []byte(info), 0o600); err != nil {
		t.Fatal(err)
	}
	m := hostMounts()
	host := m.fsMagic
	m.fsMagic = func(at string) (int64, bool) {
		if under(at, fuse) {
			return fuseSuperMagic, true
		}
		return host(at)
	}
	m.mountInfo = onceLines(func() (io.ReadCloser, error) { return os.Open(infoFile) })
	return m
}

// under reports whether at is dir or lies in it.
func under(at, dir string) bool { return at == dir || strings.HasPrefix(at, dir+"/") }

// serveConfigProbed is serveConfigOf with the handler programs judged by
// m (configLoader), not the host's mounts.
func serveConfigProbed(t *testing.T, m mountProbe, args ...string) (*serveConfig, error) {
	t.Helper()
	env := &cliutil.Env{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}
	cmd := serveCommand(env)
	var got *serveConfig
	cmd.Action = func(c *cli.Context) error {
		cfg, err := configLoader{mounts: m}.load(c)
		got = cfg
		return err
	}
	app := &cli.App{Name: "ampagent", Commands: []*cli.Command{cmd}, Writer: env.Stdout, ErrWriter: env.Stderr,
		ExitErrHandler: func(*cli.Context, error) {}}
	err := app.Run(append([]string{"ampagent", "serve", "--listen", "127.0.0.1:0"}, args...))
	return got, err
}
