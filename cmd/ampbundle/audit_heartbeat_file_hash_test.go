package main

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/resolver"
)

// TestAuditTextWhoseHeartbeatEntryHidFileHashShowsIt: a heartbeat entry
// carries the SHA-256 of the heartbeat statement applied (and a
// heartbeat_reset that of the one it forgot), which `audit --json` shows
// as file_sha256 and a mirror serves it by (/statements/{sha256},
// docs/FORMAT.md). The text line of `ampbundle audit` and `ampbundle
// receipt verify` left it out, where a revocation's or trust
// statement's line shows it: an auditor reading the text could not tell
// which heartbeat file pinned a line. It now ends "file sha256 HEX" as
// theirs do. A hash longer than a SHA-256, which only a store or receipt
// written elsewhere holds, shows its first 32 bytes and its length, so
// that the line stays short (docs/SPEC-DECISIONS.md CLI-97).
func TestAuditTextWhoseHeartbeatEntryHidFileHashShowsIt(t *testing.T) {
	sum := bytes.Repeat([]byte{0xab}, 32)
	long := bytes.Repeat([]byte{0xcd}, 1<<20)
	for _, c := range []struct {
		name  string
		entry resolver.AuditEntry
		want  string // the line's end
	}{
		{"heartbeat", resolver.AuditEntry{Action: "heartbeat", Verdict: "accepted", BundleID: "org.example.a", Version: 7,
			Signers: []string{"pub"}, FileSHA256: sum},
			"org.example.a version 7 signed by pub file sha256 " + hex.EncodeToString(sum) + "\n"},
		{"heartbeat unchanged", resolver.AuditEntry{Action: "heartbeat", Verdict: "unchanged", BundleID: "org.example.a", Version: 7,
			FileSHA256: sum}, "org.example.a version 7 file sha256 " + hex.EncodeToString(sum) + " verdict unchanged\n"},
		{"heartbeat reset", resolver.AuditEntry{Action: "heartbeat_reset", Verdict: "accepted", BundleID: "org.example.a", Version: 7,
			FileSHA256: sum}, "org.example.a version 7 file sha256 " + hex.EncodeToString(sum) + "\n"},
		{"heartbeat reset of none kept", resolver.AuditEntry{Action: "heartbeat_reset", Verdict: "accepted", BundleID: "org.example.a"},
			"org.example.a version 0\n"},
		{"heartbeat whose hash is 1 MiB", resolver.AuditEntry{Action: "heartbeat", BundleID: "org.example.a", Version: 7, FileSHA256: long},
			"org.example.a version 7 file sha256 " + hex.EncodeToString(long[:32]) + "… (1048576 bytes)\n"},
		{"revocation whose hash is 1 MiB", resolver.AuditEntry{Action: "revoke", Scopes: []string{"org.example"}, RevokedKeys: []string{"k"},
			FileSHA256: long}, "scope org.example revoked keys k file sha256 " + hex.EncodeToString(long[:32]) + "… (1048576 bytes)\n"},
		{"refused import whose hash is 1 MiB", resolver.AuditEntry{Action: "import_refused", Verdict: "bad_signature", FileSHA256: long},
			"file sha256 " + hex.EncodeToString(long[:32]) + "… (1048576 bytes) verdict bad_signature\n"},
		{"import keeps its line", resolver.AuditEntry{Action: "import", Verdict: "accepted", BundleID: "org.example.a", Version: 7,
			FileSHA256: sum}, "org.example.a version 7\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			printAudit(&b, c.entry)
			line := b.String()
			if strings.Count(line, "\n") != 1 || len(line) > 2048 || !strings.HasSuffix(line, c.want) {
				t.Fatalf("line of %d bytes %.300q, want one line under 2048 bytes ending %q", len(line), line, c.want)
			}
		})
	}
}
