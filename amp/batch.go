package amp

import "context"

// BatchBody is the BATCH body (RFC 001 §4.5): complete, individually signed
// amp-messages.
type BatchBody struct {
	Items [][]byte `cbor:"items"`
}

// DecodeBatch decodes a BATCH body; items must be a non-empty array of byte
// strings.
func DecodeBatch(body []byte) (BatchBody, error) {
	var b BatchBody
	if err := decodeBody(body, "batch", &b, "items"); err != nil {
		return BatchBody{}, err
	}
	if len(b.Items) == 0 {
		return BatchBody{}, Named(CodeInvalidMessage, "wrong_shape", "batch items must not be empty")
	}
	return b, nil
}

// BatchItem is the outcome of one item of a batch.
type BatchItem struct {
	Index   int
	Message *Message // set when the item is valid
	Err     error    // set when it is not; see ErrorBody
}

// ErrorBody returns the ERROR body for a failed item, carrying batch_index.
func (it BatchItem) ErrorBody() ErrorBody {
	b := ErrorBodyOf(it.Err)
	i := uint64(it.Index)
	b.BatchIndex = &i
	return b
}

// ReceiveBatch validates each item of a received BATCH container
// independently with Receive, in order (RFC 001 §4.5). An item that is
// itself a BATCH is refused (1001 nested_batch) so that nesting stays
// bounded. The error is for the container only: a body that is not a batch.
func (r *Receiver) ReceiveBatch(ctx context.Context, container *Message) ([]BatchItem, error) {
	if container.Type != TypeBatch {
		return nil, Named(CodeInvalidMessage, "wrong_type", "message is not a batch")
	}
	b, err := DecodeBatch(container.Body)
	if err != nil {
		return nil, err
	}
	out := make([]BatchItem, len(b.Items))
	for i, item := range b.Items {
		out[i].Index = i
		m, err := r.Receive(ctx, item)
		switch {
		case err != nil:
			out[i].Err = err
		case m.Type == TypeBatch:
			out[i].Err = Named(CodeInvalidMessage, "nested_batch", "a batch item must not be a batch")
		default:
			out[i].Message = m
		}
	}
	return out, nil
}
