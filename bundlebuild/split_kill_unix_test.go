//go:build unix

package bundlebuild

import (
	"crypto/ed25519"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestSplitKilledMidwayLeavesNoPartialSet: a split killed (SIGKILL, no
// deferred cleanup) while it writes its second part leaves no part and no
// index in the folder, only its temporary folder, which the next split
// removes; that one completes.
func TestSplitKilledMidwayLeavesNoPartialSet(t *testing.T) {
	if os.Getenv("AMPBUNDLE_SPLIT_KILLED_HELPER") != "" {
		splitKilledHelper()
		return
	}
	k := testKey(1)
	dir := t.TempDir()
	file := build(t, bigDraft(t, "org.example.kill", 8, 64<<10), k)
	path := filepath.Join(dir, "b.ampb")
	os.WriteFile(path, file, 0o644)
	out := filepath.Join(dir, "out")
	os.Mkdir(out, 0o755)
	cmd := exec.Command(os.Args[0], "-test.run=^TestSplitKilledMidwayLeavesNoPartialSet$")
	cmd.Env = append(os.Environ(), "AMPBUNDLE_SPLIT_KILLED_HELPER="+path+"|"+out)
	outb, err := cmd.CombinedOutput()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the helper was not killed: %v\n%s", err, outb)
	}
	entries, _ := os.ReadDir(out)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		if !IsTempName(e.Name()) {
			t.Errorf("a killed split left %s in the folder", e.Name())
		}
	}
	if len(names) != 1 {
		t.Fatalf("want the one temporary folder of the killed split, got %v", names)
	}
	aged(t, filepath.Join(out, names[0]), time.Now())
	index, _, err := SplitFile(path, out, bundle.MinPartSize, []ed25519.PrivateKey{k})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(out, names[0])); err == nil {
		t.Fatal("the next split left the killed one's temporary folder")
	}
	p := &bundle.Policy{Keys: []bundle.TrustedKey{{Name: "k", Key: k.Public().(ed25519.PublicKey), Scopes: []string{"*"}}}}
	if err := readParts(openIndex(t, index, p), p, out); err != nil {
		t.Fatal(err)
	}
}

// splitKilledHelper splits and kills its own process with SIGKILL in the
// middle of the second part.
func splitKilledHelper() {
	path, out, _ := strings.Cut(os.Getenv("AMPBUNDLE_SPLIT_KILLED_HELPER"), "|")
	_, _, err := SplitFileWith(path, out, bundle.MinPartSize, []ed25519.PrivateKey{testKey(1)}, SplitOptions{Progress: func(done int64) {
		if done > bundle.MinPartSize+bundle.MinPartSize/2 {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}})
	fmt.Println("not killed:", err)
	os.Exit(0)
}
