module github.com/ampbundle/ampbundle

go 1.26.0

require (
	github.com/Masterminds/semver/v3 v3.5.0
	github.com/fxamacker/cbor/v2 v2.9.6
	golang.org/x/crypto v0.58.0
)

require (
	github.com/x448/float16 v0.8.4 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
