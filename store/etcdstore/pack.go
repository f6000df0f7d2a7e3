package etcdstore

import (
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"sync"
)

// A flow's state (f/<id>) is written whole by every transition, and most
// of it is the same from one to the next (the spec's source, the inputs,
// the outputs of the steps done): stored deflated it costs etcd a fifth
// of the bytes, in every revision it keeps until compaction. A packed
// value starts with packDeflate, which no JSON value starts with, so a
// state stored as JSON (a short one, or one written before schema 5)
// reads as it is.

// packMin is the shortest state that is stored deflated.
const packMin = 1024

// packDeflate marks a value as the raw DEFLATE stream of the JSON.
const packDeflate byte = 0x01

// packLevel is the DEFLATE level of the states written.
const packLevel = flate.BestSpeed

var flateWriters = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, packLevel)
	return w
}}

var flateReaders = sync.Pool{New: func() any { return flate.NewReader(bytes.NewReader(nil)) }}

// packState is the value stored for the JSON of a state: deflated when it
// is at least packMin bytes long and that makes it shorter.
func packState(data []byte) []byte {
	if len(data) < packMin {
		return data
	}
	var b bytes.Buffer
	b.Grow(len(data)/3 + 16)
	b.WriteByte(packDeflate)
	w := flateWriters.Get().(*flate.Writer)
	defer flateWriters.Put(w)
	w.Reset(&b)
	if _, err := w.Write(data); err != nil || w.Close() != nil || b.Len() >= len(data) {
		return data
	}
	return b.Bytes()
}

// unpackState is the JSON of a stored state (v itself when it is not
// packed).
func unpackState(v []byte) ([]byte, error) {
	if len(v) == 0 || v[0] != packDeflate {
		return v, nil
	}
	r := flateReaders.Get().(io.ReadCloser)
	defer flateReaders.Put(r)
	if err := r.(flate.Resetter).Reset(bytes.NewReader(v[1:]), nil); err != nil {
		return nil, fmt.Errorf("inflate: %w", err)
	}
	out := bytes.NewBuffer(make([]byte, 0, 4*len(v)))
	_, err := out.ReadFrom(r)
	if err != nil {
		return nil, fmt.Errorf("inflate: %w", err)
	}
	return out.Bytes(), nil
}
