//go:build unix

package main

import (
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ampbundle/ampbundle/ocitransport"
	"github.com/ampbundle/ampbundle/resolver"
)

// TestOCISyncRevokedCutVersionThroughAnAgentHoldsNothingBack: the attack
// of TestOCISyncRevokedCutVersionHoldsNothingBack, with the store held by
// a running agent (the usual deployment: 'ampbundle sync --oci' goes
// through the agent's admin socket). The publisher revoked version 3 (the
// store applied the revocation), version 2 is the one to install; a
// co-tenant floods version 3's tag with more than MaxReferrers junk
// referrers in every run. Were the judgement through the socket the
// signatures only, the REVOKED version 3 would "verify" and hold version 2
// back, run after run: the revocation the publisher issued to get sites
// off version 3 turned by a key-less co-tenant into "nothing of this
// bundle_id installs again". Through the socket the judgement is the
// store's own (POST /v1/import/check), so the revoked version holds
// nothing back and version 2 is installed, as without an agent; a genuine
// cut version 3 still holds version 2 back (docs/SPEC-DECISIONS.md OCI-9,
// amended in review 45).
func TestOCISyncRevokedCutVersionThroughAnAgentHoldsNothingBack(t *testing.T) {
	dir, v3, stmt := layoutWithRevokedV3(t)
	flooded := map[digest.Digest][]ocispec.Descriptor{
		v3.Descriptor.Digest: junkReferrers(ocitransport.MaxReferrers+1, "pushed at v3 "),
	}
	for _, tc := range []struct {
		name    string
		revoked bool
		want    uint64
	}{
		{"revoked version 3 holds nothing back", true, 2},
		{"genuine version 3 holds version 2 back", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := newStore(t)
			if tc.revoked {
				mustRun(t, "import", stmt, "--db", db)
			}
			holdStoreAsAgent(t, db)
			r := runCLI(t, nil, "sync", floodedLayoutServer(t, dir, flooded), "--plain-http", "--db", db, "--json")
			got := syncEntries(t, r)
			if v := installed(t, db, translateID); v != tc.want {
				t.Fatalf("through the agent, with version 3 cut by pushed referrers, version %d was installed, want %d\nv3: %+v\nv2: %+v\n%s",
					v, tc.want, got["v3/bundle"], got["v2/bundle"], r.stderr)
			}
			if v3 := got["v3/bundle"]; tc.revoked && v3.Error != string(resolver.ErrRevoked) {
				t.Fatalf("the revoked version 3 through the agent: %+v; want refused %s (the store's own verdict)", v3, resolver.ErrRevoked)
			}
		})
	}
}
