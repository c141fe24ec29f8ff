package ocitransport

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// retagIndex is an index.json's entries as a push leaves them before
// its tag: n manifests, each tagged (one tag each, or all tagged "v1"
// when oneTag), then the untagged entry of the manifest being tagged, in
// a list of exactly that length.
func retagIndex(n int, oneTag bool, desc ocispec.Descriptor) []ocispec.Descriptor {
	out := make([]ocispec.Descriptor, 0, n+1)
	for i := range n {
		tag := fmt.Sprintf("t%d", i)
		if oneTag {
			tag = "v1"
		}
		out = append(out, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromString(fmt.Sprint(i)), Size: 500,
			Annotations: map[string]string{ocispec.AnnotationRefName: tag}})
	}
	return append(out, ocispec.Descriptor{MediaType: desc.MediaType, Digest: desc.Digest, Size: desc.Size})
}

// TestTaggingALayoutCopiesNoEntryOfItsIndex: the threat. Every tag
// written to a layout (a copy's, a push's, each tag a tar destination
// copies again when it is opened) ran retag over index.json's entries,
// which built a second list of every entry kept and, for each entry the
// tag named before, scanned that list again: on an index of n entries
// of one tag, n²/2 digest comparisons for one write (a benchmark of
// this file: BenchmarkRetagIndexOfOneTag). Expected: retag filters
// the entries in place, once, so that what it allocates for one tag does
// not grow with the index (the least of three runs; not judged under
// the race detector), for a new tag and for a tag moved to another
// manifest (docs/SPEC-DECISIONS.md OCI-43).
func TestTaggingALayoutCopiesNoEntryOfItsIndex(t *testing.T) {
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromString("tagged now"), Size: 500}
	for _, tc := range []struct {
		name string
		tag  string
	}{
		{"a new tag on an index of distinct tags", "new"},
		{"a tag the index names, moved to another manifest", "t0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var alloc [2]uint64
			for i, n := range []int{2000, 4000} {
				inputs := make([][]ocispec.Descriptor, testalloc.Runs)
				for r := range inputs {
					inputs[r] = retagIndex(n, false, desc)
				}
				run := 0
				var got []ocispec.Descriptor
				alloc[i] = testalloc.Least(func() {
					got = retag(inputs[run%len(inputs)], desc, tc.tag)
					run++
				})
				if want := retagCopying(retagIndex(n, false, desc), desc, tc.tag); !sameIndexJSON(t, got, want) {
					t.Fatalf("n=%d: retag gave other entries than before", n)
				}
			}
			t.Logf("one tag written: %d bytes at 2,000 entries, %d at 4,000", alloc[0], alloc[1])
			if !testalloc.Race && alloc[1] > alloc[0]+4<<10 {
				t.Fatalf("one tag written allocated %d bytes at 2,000 entries and %d at 4,000: it grows with the index", alloc[0], alloc[1])
			}
		})
	}
}

// TestRetagKeepsTheLayoutBytes: a guard. retag gives, as JSON, the
// entries the list-copying retag gave (retagCopying), in the same order,
// over indexes of every shape a folder anyone may write to can hold: a
// tag on several entries, on the manifest tagged, an entry listed
// twice, untagged and tagged entries of one digest, other annotations.
func TestRetagKeepsTheLayoutBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 43))
	digests := []digest.Digest{digest.FromString("a"), digest.FromString("b"), digest.FromString("c"), digest.FromString("d")}
	tags := []string{"v1", "v2", "v3"}
	for i := range 5000 {
		var index []ocispec.Descriptor
		for range rng.IntN(9) {
			d := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digests[rng.IntN(len(digests))], Size: int64(1 + rng.IntN(3)), ArtifactType: []string{"", "x"}[rng.IntN(2)]}
			switch rng.IntN(3) {
			case 0:
			case 1:
				d.Annotations = map[string]string{ocispec.AnnotationRefName: tags[rng.IntN(len(tags))]}
			case 2:
				d.Annotations = map[string]string{ocispec.AnnotationRefName: tags[rng.IntN(len(tags))], "other": "x"}
			}
			index = append(index, d)
		}
		desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digests[rng.IntN(len(digests))], Size: 1}
		if rng.IntN(2) == 0 {
			desc.Annotations = map[string]string{ocispec.AnnotationRefName: "old", "kept": "y"}
		}
		tag := tags[rng.IntN(len(tags))]
		want := retagCopying(slices.Clone(index), desc, tag)
		if got := retag(slices.Clone(index), desc, tag); !sameIndexJSON(t, got, want) {
			t.Fatalf("case %d: retag of %v with %s as %s gave %v, before %v", i, index, desc.Digest, tag, got, want)
		}
	}
}

// BenchmarkRetagIndexOfOneTag is one tag written to an index whose
// entries all carry that tag (a folder anyone may write to), at two
// sizes: before OCI-43 the time grew with the square of the entries.
func BenchmarkRetagIndexOfOneTag(b *testing.B) {
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromString("tagged now"), Size: 500}
	for _, n := range []int{2500, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			index := retagIndex(n, true, desc)
			for b.Loop() {
				b.StopTimer()
				in := slices.Clone(index)
				b.StartTimer()
				retag(in, desc, "v1")
			}
		})
	}
}

// sameIndexJSON says whether a and b encode to the same index.json
// entries.
func sameIndexJSON(t *testing.T, a, b []ocispec.Descriptor) bool {
	t.Helper()
	ja, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}

// retagCopying is retag as it was before OCI-43, kept as the reference
// of the entries and order retag gives.
func retagCopying(index []ocispec.Descriptor, desc ocispec.Descriptor, reference string) []ocispec.Descriptor {
	var kept, moved []ocispec.Descriptor
	for _, d := range index {
		ref, tagged := d.Annotations[ocispec.AnnotationRefName]
		switch {
		case tagged && ref == reference:
			moved = append(moved, d)
		case !tagged && d.Digest == desc.Digest:
		default:
			kept = append(kept, d)
		}
	}
	for _, d := range moved {
		if d.Digest != desc.Digest && !listed(kept, d) {
			kept = append(kept, ocispec.Descriptor{MediaType: d.MediaType, Digest: d.Digest, Size: d.Size, ArtifactType: d.ArtifactType})
		}
	}
	entry := desc
	entry.Annotations = map[string]string{ocispec.AnnotationRefName: reference}
	for k, v := range desc.Annotations {
		if k != ocispec.AnnotationRefName {
			entry.Annotations[k] = v
		}
	}
	return append(kept, entry)
}
