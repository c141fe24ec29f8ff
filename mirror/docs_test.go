package mirror

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// formatSection returns the text of docs/FORMAT.md from the heading that
// starts with heading to the next heading of the same or a higher level.
func formatSection(t *testing.T, heading string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "docs", "FORMAT.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i := strings.Index(doc, "\n"+heading)
	if i < 0 {
		t.Fatalf("docs/FORMAT.md has no heading %q", heading)
	}
	level := strings.Index(heading, " ")
	rest := doc[i+1+len(heading):]
	for _, l := range regexp.MustCompile(`(?m)^#{1,6} `).FindAllStringIndex(rest, -1) {
		if l[1]-l[0]-1 <= level {
			return rest[:l[0]]
		}
	}
	return rest
}

// jsonBlocks returns the ```json fenced blocks of s.
func jsonBlocks(t *testing.T, s string) []string {
	t.Helper()
	var out []string
	for _, m := range regexp.MustCompile("(?s)```json\n(.*?)```").FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	if len(out) == 0 {
		t.Fatal("no json example in the section")
	}
	return out
}

// keysOf returns the set of member paths of a JSON value ("a.b", arrays
// as "a[]"), so that an example with placeholder values can be compared
// with a real document by shape.
func keysOf(v any, prefix string, out map[string]bool) {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			out[prefix+"."+k] = true
			keysOf(x, prefix+"."+k, out)
		}
	case []any:
		for _, x := range t {
			keysOf(x, prefix+"[]", out)
		}
	}
}

func sortedKeys(m map[string]bool) []string {
	var s []string
	for k := range m {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}

// A second implementation is written from docs/FORMAT.md alone: the §11.2
// example must be the testdata file the tests check, byte for byte.
func TestDocsWellKnownExampleIsTheCheckedFile(t *testing.T) {
	blocks := jsonBlocks(t, formatSection(t, "### 11.2 "))
	file, err := os.ReadFile(filepath.Join("..", "testdata", "mirror", "well-known.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(blocks[0]) != strings.TrimSpace(string(file)) {
		t.Fatalf("docs/FORMAT.md §11.2 example differs from testdata/mirror/well-known.json:\n%s", blocks[0])
	}
}

// The §11.1 example has the members, and only the members, of an index a
// mirror serves (its values are placeholders).
func TestDocsIndexExampleHasTheServedShape(t *testing.T) {
	var example any
	if err := json.Unmarshal([]byte(jsonBlocks(t, formatSection(t, "### 11.1 "))[0]), &example); err != nil {
		t.Fatal(err)
	}
	p := newStore(t, testBundle(t, 1))
	applyStatements(t, p, strangerRevocation(t, 1))
	applyHeartbeats(t, p, signedHeartbeat(t, 4, "2026-11-20T11:00:00Z", testKey))
	_, ts := startMirror(t, p, nil)
	resp, err := ts.Client().Get(ts.URL + IndexPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var served any
	if err := json.NewDecoder(resp.Body).Decode(&served); err != nil {
		t.Fatal(err)
	}
	a, b := map[string]bool{}, map[string]bool{}
	keysOf(example, "", a)
	keysOf(served, "", b)
	delete(a, ".bundles[].expires_at") // absent when the bundle does not expire
	if !reflect.DeepEqual(sortedKeys(a), sortedKeys(b)) {
		t.Fatalf("docs/FORMAT.md §11.1 example members %v\nserved index members %v", sortedKeys(a), sortedKeys(b))
	}
	raw, _ := json.Marshal(example)
	if _, err := DecodeIndex(raw); err == nil {
		t.Fatal("the placeholder example decodes: its placeholders are not checked")
	}
}

// The §11.3 envelope example and table are what the mirror writes: every
// documented code with its status and fixed message, and no other code.
func TestDocsErrorEnvelopeMatchesTheServer(t *testing.T) {
	sec := formatSection(t, "### 11.3 ")
	rec := httptest.NewRecorder()
	writeError(rec, http.StatusNotFound, CodeNotFound)
	if got := strings.TrimSpace(rec.Body.String()); got != strings.TrimSpace(jsonBlocks(t, sec)[0]) {
		t.Fatalf("docs example %s, server writes %s", jsonBlocks(t, sec)[0], got)
	}
	rows := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| ([0-9]{3}) \\|").FindAllStringSubmatch(sec, -1)
	status := map[string]string{
		CodeNotFound: "404", CodeMethodNotAllowed: "405", CodeRangeNotSatisfy: "416",
		CodeOverloaded: "503", CodeUnavailable: "503", CodeInternal: "500",
	}
	if len(rows) != len(messages) || len(status) != len(messages) {
		t.Fatalf("docs table has %d codes, the server %d", len(rows), len(messages))
	}
	for _, r := range rows {
		if _, ok := messages[r[1]]; !ok || status[r[1]] != r[2] {
			t.Errorf("docs row %s %s: not a code of the server with that status", r[1], r[2])
		}
	}
}

// TestDocsACDPExampleIsWhatTheMirrorServes: the ACDP-0007 example of
// docs/FORMAT.md §11.2 is what a mirror with the default options serves
// to a consumer that dialled mirror.example.org; the annotation table
// explains every member of it and no other; the error table is what the
// route writes (threat: a second implementation, written from the docs,
// that expects a document or an error we do not serve).
func TestDocsACDPExampleIsWhatTheMirrorServes(t *testing.T) {
	sec := formatSection(t, "#### ACDP-0007 capabilities document")
	blocks := jsonBlocks(t, sec)
	var example, served any
	if err := json.Unmarshal([]byte(blocks[0]), &example); err != nil {
		t.Fatal(err)
	}
	m, _ := startMirror(t, newStore(t, testBundle(t, 1)), nil)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, ACDPWellKnownPath, nil)
	req.Host = "mirror.example.org"
	m.ServeHTTP(rec, req)
	if err := json.Unmarshal(rec.Body.Bytes(), &served); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(example, served) {
		t.Fatalf("docs/FORMAT.md example:\n%s\nthe mirror serves:\n%s", blocks[0], rec.Body)
	}
	members := map[string]bool{}
	keysOf(example, "", members)
	codes := map[string]bool{ACDPCodeNotFound: true, ACDPCodeSchemaViolation: true, ACDPCodeNotImplemented: true, ACDPCodeInternal: true}
	annotated := map[string]bool{}
	for _, r := range regexp.MustCompile("(?m)^\\| `([a-z_.]+)` \\| ").FindAllStringSubmatch(sec, -1) {
		if !codes[r[1]] {
			annotated["."+r[1]] = true
		}
	}
	if !reflect.DeepEqual(sortedKeys(members), sortedKeys(annotated)) {
		t.Fatalf("example members %v\nannotated %v", sortedKeys(members), sortedKeys(annotated))
	}
	errRec := httptest.NewRecorder()
	writeACDPError(errRec, ACDPCodeNotImplemented)
	if strings.TrimSpace(blocks[1]) != strings.TrimSpace(errRec.Body.String()) {
		t.Fatalf("docs error example %s, the route writes %s", blocks[1], errRec.Body)
	}
	rows := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| ([0-9]{3}) \\|").FindAllStringSubmatch(sec, -1)
	if len(rows) != len(codes) {
		t.Fatalf("docs error table has %d codes, the route %d", len(rows), len(codes))
	}
	for _, r := range rows {
		status, _ := acdpError(r[1])
		if !codes[r[1]] || strconv.Itoa(status) != r[2] {
			t.Errorf("docs row %s %s: the route gives it %d", r[1], r[2], status)
		}
	}
}
