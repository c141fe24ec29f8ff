package catalog

import (
	"encoding/hex"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// ManifestView is a bundle's signed manifest as 'ampbundle inspect',
// 'verify' and 'build' print it with --json, and as the bundle page shows
// it: one view, so the page and the CLI cannot disagree about a bundle.
// Its text fields are the publisher's: a printer escapes or sanitizes
// them.
type ManifestView struct {
	// File is the bundle file it was read from (the CLI); empty for the
	// store's bundles.
	File      string `json:"file,omitempty"`
	BundleID  string `json:"bundle_id"`
	Version   uint64 `json:"version"`
	CreatedAt string `json:"created_at"`
	ExpiresAt string `json:"expires_at,omitempty"`
	// Publisher is the publisher's claim, verified by nothing here.
	Publisher string `json:"publisher"`
	// SignatureChecked: each signature's Verified says whether a trusted
	// key made it; false: no signature was checked (inspect).
	SignatureChecked bool                 `json:"signature_checked"`
	Signatures       []ManifestSignature  `json:"signatures"`
	Artifacts        []ManifestArtifact   `json:"artifacts"`
	Capabilities     []ManifestCapability `json:"capabilities"`
	Aliases          map[string]string    `json:"aliases,omitempty"`
	// Delta is set for a delta bundle: its base and what it takes from
	// it.
	Delta *ManifestDelta `json:"delta,omitempty"`
}

// ManifestSignature is a signature of the manifest and the trusted key
// that verified it, if any.
type ManifestSignature struct {
	KID       string `json:"kid"`
	Verified  bool   `json:"verified"`
	TrustedAs string `json:"trusted_as,omitempty"`
}

// ManifestArtifact is an artifact entry of the manifest; Hash is hex.
type ManifestArtifact struct {
	Key       string `json:"key"`
	MediaType string `json:"media_type"`
	Size      uint64 `json:"size"`
	HashAlg   string `json:"hash_alg"`
	Hash      string `json:"hash"`
}

// ManifestCapability is a capability the manifest declares, with the
// version ranges it supports and deprecates.
type ManifestCapability struct {
	ID               string   `json:"id"`
	SupportedRanges  []string `json:"supported_ranges,omitempty"`
	DeprecatedRanges []string `json:"deprecated_ranges,omitempty"`
}

// ManifestDelta describes a delta bundle: its base and the artifacts it
// takes from it.
type ManifestDelta struct {
	Base         string `json:"base"`
	BaseVersion  uint64 `json:"base_version"`
	Omitted      int    `json:"omitted"`       // artifacts taken from the base
	OmittedBytes uint64 `json:"omitted_bytes"` // their total size
}

// NewManifestView is the view of m with the signatures sigs; checked says
// whether sigs were checked against trusted keys (SignaturesOf).
func NewManifestView(m *bundle.Manifest, sigs []ManifestSignature, checked bool) ManifestView {
	v := ManifestView{BundleID: m.BundleID, Version: m.Version, CreatedAt: m.CreatedAt.Format(time.RFC3339),
		Publisher: m.Publisher, SignatureChecked: checked, Signatures: sigs, Aliases: m.Aliases,
		Artifacts: []ManifestArtifact{}, Capabilities: []ManifestCapability{}}
	if m.ExpiresAt != nil {
		v.ExpiresAt = m.ExpiresAt.Format(time.RFC3339)
	}
	for _, a := range m.Artifacts {
		v.Artifacts = append(v.Artifacts, ManifestArtifact{Key: a.Key, MediaType: a.MediaType, Size: a.Size, HashAlg: a.HashAlg, Hash: hex.EncodeToString(a.Hash)})
	}
	for _, d := range m.Capabilities {
		c := ManifestCapability{ID: d.ID().String()}
		for _, r := range d.SupportedRanges {
			c.SupportedRanges = append(c.SupportedRanges, r.String())
		}
		for _, r := range d.DeprecatedRanges {
			c.DeprecatedRanges = append(c.DeprecatedRanges, r.String())
		}
		v.Capabilities = append(v.Capabilities, c)
	}
	return v
}

// SignaturesOf lists the signatures sigs and which of the trusted keys
// signers (those that verified the manifest) made each; nil signers: none
// was checked.
func SignaturesOf(sigs []bundle.Signature, signers []bundle.TrustedKey) []ManifestSignature {
	var out []ManifestSignature
	for _, s := range sigs {
		ms := ManifestSignature{KID: s.KID}
		for _, k := range signers {
			if s.KID == amp.DIDKey(k.Key) {
				ms.Verified, ms.TrustedAs = true, k.Name
			}
		}
		out = append(out, ms)
	}
	return out
}

// DeltaOf describes the delta d of the manifest m.
func DeltaOf(m *bundle.Manifest, d *bundle.Delta) ManifestDelta {
	v := ManifestDelta{Base: d.Base.String(), BaseVersion: d.Base.Version, Omitted: len(d.Omitted)}
	for _, k := range d.Omitted {
		if a, ok := m.Artifact(k); ok {
			v.OmittedBytes += a.Size
		}
	}
	return v
}
