package offlineschema

import (
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// memLoader is an in-memory bundle: artifacts by key, "$id"s indexed with
// SchemaID like a resolver would, every Load recorded.
type memLoader struct {
	files map[string]string
	ids   map[string]string
	fail  map[string]error // Load errors to inject, by key

	mu    sync.Mutex
	loads []string
}

func newLoader(files map[string]string) *memLoader {
	l := &memLoader{files: files, ids: map[string]string{}, fail: map[string]error{}}
	for k, v := range files {
		if id, err := SchemaID([]byte(v)); err == nil && id != "" {
			l.ids[id] = k
		}
	}
	return l
}

func (l *memLoader) Load(key string) ([]byte, error) {
	l.mu.Lock()
	l.loads = append(l.loads, key)
	l.mu.Unlock()
	if err := l.fail[key]; err != nil {
		return nil, err
	}
	v, ok := l.files[key]
	if !ok {
		return nil, amp.Named(amp.CodeUnavailable, "artifact_missing", "artifact is not in the store")
	}
	return []byte(v), nil
}

func (l *memLoader) KeyForID(id string) (string, bool) {
	k, ok := l.ids[id]
	return k, ok
}

// with returns a copy of files with the given key set to doc.
func with(files map[string]string, key, doc string) map[string]string {
	out := make(map[string]string, len(files)+1)
	for k, v := range files {
		out[k] = v
	}
	out[key] = doc
	return out
}

// ampErr asserts that err is an *amp.Error with the given name and code.
func ampErr(t *testing.T, err error, name amp.ErrName, code amp.Code) *amp.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s", name)
	}
	var e *amp.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T is not an *amp.Error: %v", err, err)
	}
	if e.Name != name || e.Code != code {
		t.Fatalf("got %s (%d) %q, want %s (%d)", e.Name, e.Code, e.Message, name, code)
	}
	return e
}

// noLeak asserts that none of the secrets appears in the safe parts of e.
func noLeak(t *testing.T, e *amp.Error, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(e.Message, s) {
			t.Errorf("message %q echoes %q", e.Message, s)
		}
	}
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
