package mirror

import (
	"bytes"
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/resolver"
)

// junkFile serves body, under the listed file's ETag and with ranges, in
// place of the bundle file at path; everything else is h's.
type junkFile struct {
	h          http.Handler
	path, etag string
	body       []byte
}

func (j *junkFile) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != j.path {
		j.h.ServeHTTP(w, r)
		return
	}
	w.Header().Set("ETag", j.etag)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(j.body))
}

// cborJunk is size bytes that are no bundle file at all: one CBOR array
// declaring as many items as a signed manifest item may hold bytes, each
// item two bytes, so that reading it as a signed manifest goes on until
// the store's bound on one is passed.
func cborJunk(size int) []byte {
	b := make([]byte, size)
	b[0] = 0x9a
	binary.BigEndian.PutUint32(b[1:], 16<<20-5)
	for i := 5; i+1 < size; i += 2 {
		b[i] = 0x18 // an unsigned integer in one more byte (0)
	}
	return b
}

// TestJunkHeadsSpendTheBudgetMeantForBundleHeads: the heads refused in a
// run may take the run's budget past their first 64 KiB (MIRROR-23),
// meant for the signed manifests of bundles the trust refuses (remembered,
// so that the next run spends it on others). A mirror lists, before a
// genuine bundle whose signed manifest is over 64 KiB, a file that is no
// bundle at all: bytes that read as a CBOR item growing until the store's
// bound on a signed manifest (16 MiB) is passed. It was refused
// limit_exceeded after 16 MiB, charged to the budget, not remembered, and
// its list went on: once the budget was spent, the genuine bundle's head
// was not read past 64 KiB (limit_exceeded), in every run. A head that is
// not a bundle file's is now charged nothing of the budget meant for
// bundles; no store takes it, so no mirror serving what its store imported
// serves it: it ends its list as a file other than the one listed does
// (one a list a run), and is tried last by the next run.
func TestJunkHeadsSpendTheBudgetMeantForBundleHeads(t *testing.T) {
	own := ownKey(129)
	junked := largeEchoBundleBy(t, maxBundleHeadBytes+(1<<20), own, 'j') // org.example.echo, listed first
	genuine := manyArtifactsBundle(t, "org.example.g", testKey, 1500, 0)
	head := signedManifestSize(t, genuine)
	cb := stationOf(t, []ed25519.PrivateKey{own, testKey}, junked, genuine)
	url := urlOf(t, &junkFile{h: cb, path: BundlesPrefix + "org.example.echo", etag: `"sha-256:` + sum(junked) + `"`, body: cborJunk(len(junked))})
	site := agentStore(t)
	hooks := syncHooks{headBudget: head} // less than a junk head
	var runs []string
	for run := 1; run <= 3; run++ {
		rep, err := syncWithHooks(t, site, url, hooks, nil)
		if err != nil {
			t.Fatal(err)
		}
		if run == 1 && (len(rep.Items) != 2 || rep.Items[0].BundleID != "org.example.echo") {
			t.Fatalf("run 1: %+v; want the junk listed first", rep.Items)
		}
		for _, it := range rep.Items {
			runs = append(runs, it.BundleID+" "+string(it.Outcome)+" "+it.Error)
			if it.BundleID == "org.example.g" && it.Outcome == OutcomeImported {
				return
			}
		}
	}
	t.Fatalf("a file that is no bundle, listed before a genuine bundle whose signed manifest is over 64 KiB, kept it out of three runs: %q", runs)
}

// TestHeadReadFailuresAreNotJudgedAsRefusals: a head read that ended with
// neither a verdict on the file nor one of the four failures headRefusal
// listed (a request that could not be built, an error without a name) was
// taken for a verdict: its bytes were discarded as judged, and, after the
// store's trust, it was remembered as the file's refusal, "not signed as
// the store requires", by a name that judged nothing. Only what judged the
// head refuses the file now.
func TestHeadReadFailuresAreNotJudgedAsRefusals(t *testing.T) {
	for _, err := range []error{
		amp.Named(0, ErrMirrorUnreachable, "cannot reach the mirror"),
		amp.Named(0, ErrMirrorRefused, "http 503"),
		amp.Named(0, ErrIncomplete, "cut off"),
		amp.Named(0, resolver.ErrStoreIO, "cannot write to the sync spool folder"),
		amp.Named(0, ErrMisconfigured, "cannot build the request"),
		errors.New("an error without a name"),
		amp.Named(0, ErrTooLarge, "budget spent").WithCause(errHeadBudget),
	} {
		if headRefusal(err) {
			t.Errorf("%v: taken for a verdict on the file", err)
		}
	}
}
