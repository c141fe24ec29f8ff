package catalog

import (
	"encoding/hex"

	"github.com/ampbundle/ampbundle/capability"
)

// Listing is the model as 'ampbundle ls --json' prints it.
type Listing struct {
	Generation   uint64             `json:"generation"`
	Bundles      []ListedBundle     `json:"bundles"`
	Capabilities []ListedCapability `json:"capabilities"`
	Aliases      map[string]string  `json:"aliases"`
}

// ListedBundle is a bundle of a Listing.
type ListedBundle struct {
	BundleID       string   `json:"bundle_id"`
	Version        uint64   `json:"version"`
	HighestVersion uint64   `json:"highest_version"`
	ImportedAt     string   `json:"imported_at"`
	ExpiresAt      string   `json:"expires_at,omitempty"`
	Signers        []string `json:"signers"`
	Artifacts      uint64   `json:"artifacts"`
	Bytes          uint64   `json:"bytes"`
	// ManifestSHA256 is resolver.Bundle.ManifestSHA256: the hex SHA-256
	// of the stored signed manifest, which changes whenever the stored
	// file does (absent through an older agent's admin socket).
	ManifestSHA256 string `json:"manifest_sha256,omitempty"`
	Revoked        string `json:"revoked,omitempty"` // why it fails closed
	Stale          string `json:"stale,omitempty"`   // why it fails closed as stale (freshness policy)
	Expired        bool   `json:"expired,omitempty"` // it fails closed as expired
}

// ListedCapability is a capability of a Listing.
type ListedCapability struct {
	Name     string          `json:"name"`
	Versions []ListedVersion `json:"versions"`
}

// ListedVersion is a version of a ListedCapability, with the schema
// references 'ampbundle resolve' takes.
type ListedVersion struct {
	Version      string    `json:"version"`
	BundleID     string    `json:"bundle_id"`
	InputSchema  SchemaRef `json:"input_schema"`
	OutputSchema SchemaRef `json:"output_schema"`
}

// SchemaRef is a schema reference with the fields 'ampbundle resolve'
// takes.
type SchemaRef struct {
	BundleID    string `json:"bundle_id,omitempty"`
	ArtifactKey string `json:"artifact_key,omitempty"`
	HashAlg     string `json:"hash_alg"`
	Hash        string `json:"hash"`
	URI         string `json:"uri,omitempty"`
}

// RefOf is the SchemaRef of r.
func RefOf(r capability.SchemaRef) SchemaRef {
	return SchemaRef{BundleID: r.BundleID, ArtifactKey: r.ArtifactKey, HashAlg: r.HashAlg, Hash: hex.EncodeToString(r.Hash), URI: r.URI}
}

// Listing returns the model's listing view.
func (m *Model) Listing() Listing {
	v := Listing{Generation: m.Generation, Bundles: []ListedBundle{}, Capabilities: []ListedCapability{}, Aliases: map[string]string{}}
	for _, b := range m.Bundles {
		signers := b.Signers
		if signers == nil {
			signers = []string{}
		}
		v.Bundles = append(v.Bundles, ListedBundle{BundleID: b.BundleID, Version: b.Version, HighestVersion: b.Highest,
			ImportedAt: b.ImportedAt, ExpiresAt: b.ExpiresAt, Signers: signers, Artifacts: b.Artifacts, Bytes: b.Bytes,
			ManifestSHA256: b.ManifestSHA256, Revoked: b.Revoked, Stale: b.Stale, Expired: b.Expired})
	}
	for _, c := range m.Capabilities {
		lc := ListedCapability{Name: c.Name, Versions: []ListedVersion{}}
		for _, ver := range c.Versions {
			d := ver.Descriptor
			lc.Versions = append(lc.Versions, ListedVersion{Version: ver.Version, BundleID: ver.BundleID,
				InputSchema: RefOf(d.InputSchema), OutputSchema: RefOf(d.OutputSchema)})
		}
		v.Capabilities = append(v.Capabilities, lc)
	}
	for typ, name := range m.Aliases {
		v.Aliases[typ] = name
	}
	return v
}
