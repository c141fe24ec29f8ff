package ocitransport

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// RequestAllowance is the time a file's budget (fileBudget) grants each
// request its layers need, besides one answer's header wait, the grace
// and the file's bytes at the minimum data rate. An honest registry on a
// link of 300 ms round trip answers a layer's GET it redirects to its
// storage in two round trips and the two servers' time, about 0.9 s
// (docs/SPEC-DECISIONS.md OCI-34).
const RequestAllowance = 2 * time.Second

// TagPageAllowance is the time a tag listing's budget grants each page
// it may read, besides one header wait, the grace and the listing's bytes
// at the minimum data rate: about 9.5 minutes for a default listing's 41
// pages, where each page's own bounds let a registry hold it some 72
// minutes, and a registry taking 9 s a page reads the largest listing
// whole (docs/SPEC-DECISIONS.md OCI-39, amended).
const TagPageAllowance = tagPageRequests * RequestAllowance

// responseHeaderWait is how long one request waits for its answer's
// headers once it is sent (the client's ResponseHeaderTimeout,
// newHTTPClient).
const responseHeaderWait = 60 * time.Second

// The requests one layer takes (fileBudget), by what is done with it.
const (
	pullRequests = 1 // the source's GET
	pushRequests = 3 // streamUpload's POST, PATCH and PUT
	copyRequests = 4 // the destination's HEAD, the source's GET, oras-go's POST and PUT
	// tagPageRequests: a tag page is one GET, but a registry may build
	// each from a scan of the repository's every tag; a listing grants
	// each page TagPageAllowance (OCI-39, amended).
	tagPageRequests = 5
)

// maxBudget caps a file's budget (a duration must not wrap negative).
const maxBudget = time.Duration(math.MaxInt64 / 2)

// errBudgetSpent is the cause a file's requests are cancelled with when
// its budget is spent. It is an errStalled, so a body it cuts reads as
// one below the minimum data rate (oci_too_slow).
var errBudgetSpent = fmt.Errorf("%w: the file's time budget is spent", errStalled)

// fileBudget is one clock over every request of one file's layers (a
// pull's, a push's, a copy's) or of the statement manifests one listing
// fetches. Each request keeps its own bounds (the
// dial, the header wait, the grace, the minimum data rate), which a
// registry could take in full for each of MaxLayers small layers, some
// 250 hours for a pull of one-byte layers where the same bytes in one
// layer take at most some 90 s. The file's layers must all be done by
// due: one header wait, the grace, the file's bytes at the minimum data
// rate, and RequestAllowance for each request the layers need
// (docs/SPEC-DECISIONS.md OCI-34, OCI-35, OCI-36). A layer is not begun past
// due (check), and a request under way then is cancelled (the timer).
type fileBudget struct {
	o      *Options
	layers int
	what   string        // what the layers are, for the error
	each   time.Duration // the allowance of one layer's requests, for the error
	due    time.Time
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer
}

// startBudget starts the budget of layers layers (what they are: "layers
// of a file") of size bytes in all, each taking perLayer requests, on o's
// clock, its minimum data rate and grace. Its requests are made on the
// budget's ctx; stop it when they are done.
func (o *Options) startBudget(ctx context.Context, what string, layers int, size int64, perLayer int) *fileBudget {
	allow := maxBudget // a count of requests whose allowance would wrap (a tag listing's pages under a huge MaxTags)
	if n := int64(layers) * int64(perLayer); n >= 0 && n < int64(maxBudget/RequestAllowance) {
		allow = addCapped(time.Duration(n)*RequestAllowance+responseHeaderWait, o.Grace)
	}
	if sec := float64(max(size, 0)) / float64(o.MinDataRate); sec < maxBudget.Seconds() {
		allow = addCapped(allow, time.Duration(sec*float64(time.Second)))
	} else {
		allow = maxBudget
	}
	b := &fileBudget{o: o, layers: layers, what: what, each: time.Duration(perLayer) * RequestAllowance, due: o.Now().Add(allow)}
	ctx, b.cancel = context.WithCancelCause(ctx)
	b.ctx = context.WithValue(ctx, budgetKey{}, b)
	b.timer = time.AfterFunc(allow, func() { b.cancel(errBudgetSpent) })
	return b
}

// budgetKey is the context key of the fileBudget whose requests are made
// on a context (startBudget).
type budgetKey struct{}

// budgetSpentBy says whether ctx is a budget's (startBudget) whose due
// time o.Now has reached, and then ends the budget's requests (cause
// errBudgetSpent). The round tripper asks it before each request it
// sends: a layer's redirects, its token requests and an upload's steps
// are cut on the clock of Options.Now, not only by the timer, which runs
// on the system's clock (docs/SPEC-DECISIONS.md OCI-40).
func budgetSpentBy(ctx context.Context) bool {
	b, _ := ctx.Value(budgetKey{}).(*fileBudget)
	if b == nil || b.o.Now().Before(b.due) {
		return false
	}
	b.cancel(errBudgetSpent)
	return true
}

// addCapped is a + b (both at least 0), at most maxBudget.
func addCapped(a, b time.Duration) time.Duration {
	if b >= maxBudget-min(a, maxBudget) {
		return maxBudget
	}
	return a + b
}

// layerBytes is the sum of the layers' sizes, at most math.MaxInt64.
func layerBytes(layers []ocispec.Descriptor) int64 {
	var size int64
	for _, l := range layers {
		size += min(max(l.Size, 0), math.MaxInt64-size)
	}
	return size
}

// check is nil while the budget lasts; past it, oci_too_slow: the next
// layer is not begun.
func (b *fileBudget) check() error {
	if b.o.Now().Before(b.due) && !errors.Is(context.Cause(b.ctx), errBudgetSpent) {
		return nil
	}
	return b.spent()
}

// failed is err, a layer's failure, or oci_too_slow when the budget ran
// out meanwhile (its requests were cancelled for it).
func (b *fileBudget) failed(err error) error {
	if err != nil && errors.Is(context.Cause(b.ctx), errBudgetSpent) {
		return b.spent()
	}
	return err
}

func (b *fileBudget) spent() error {
	return fail(ErrTooSlow, "the %d %s took longer than their budget (the grace, %d bytes per second, %v each)",
		b.layers, b.what, b.o.MinDataRate, b.each)
}

// stop stops the clock and ends the budget's requests.
func (b *fileBudget) stop() {
	b.timer.Stop()
	b.cancel(nil)
}
