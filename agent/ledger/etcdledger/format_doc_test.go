package etcdledger

import (
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
)

// TestFormatDocEtcdEntryExample: the annotated entry of docs/FORMAT.md,
// "Ledger on etcd", is what this package writes (threat: a second
// implementation built from the document reads replies as something else).
func TestFormatDocEtcdEntryExample(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/FORMAT.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "<!-- etcd-ledger-entry:begin -->")
	block, _, ok2 := strings.Cut(block, "<!-- etcd-ledger-entry:end -->")
	if !ok || !ok2 {
		t.Fatal("no etcd-ledger-entry block in docs/FORMAT.md")
	}
	var key, value string
	for _, line := range strings.Split(block, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && f[0] == "key:":
			key = f[1]
		case len(f) >= 2 && f[0] == "value:":
			value += f[1]
		case len(f) >= 1 && value != "" && f[0] != "```":
			value += f[0]
		}
	}
	var id [16]byte
	hex.Decode(id[:], []byte("000001a201ac483ba55da43cfd20eb36"))
	k := ledger.Key{Sender: "did:key:z6MkExample", ID: id}
	if got := keysOf(DefaultPrefix, k).entry; got != key {
		t.Fatalf("key %s, document says %s", got, key)
	}
	e := entry{state: stateDone, expires: time.UnixMilli(1795348800000), reserve: 1024, reply: []byte{0xa1, 0x01, 0x02}}
	e.end = bucketEnd(e.expires, e.expires)
	p, _ := hex.DecodeString(hash16("did:key:z6MkExample"))
	copy(e.principal[:], p)
	if got := hex.EncodeToString(e.encode()); got != value {
		t.Fatalf("value %s, document says %s", got, value)
	}
	if _, err := decodeEntry(e.encode()); err != nil {
		t.Fatal(err)
	}
}
