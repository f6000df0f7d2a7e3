package stratum

import (
	"fmt"
	"maps"
	"reflect"

	"github.com/stratum-go/stratum/engine/internal/llm"
)

// mediaField is an input field of type Media, *Media or []Media: sent as
// media parts of the user turn, never in the prompt text.
type mediaField struct {
	name   string // JSON name
	goName string
}

var (
	mediaType      = reflect.TypeFor[Media]()
	mediaPtrType   = reflect.TypeFor[*Media]()
	mediaSliceType = reflect.TypeFor[[]Media]()
)

// mediaFields are the media fields of a struct input type.
func mediaFields(t reflect.Type) []mediaField {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []mediaField
	for _, f := range jsonFields(t) {
		switch f.field.Type {
		case mediaType, mediaPtrType, mediaSliceType:
			out = append(out, mediaField{name: f.name, goName: f.field.Name})
		}
	}
	return out
}

func (f *Fn[In, Out]) isMedia(name string) bool {
	for _, m := range f.media {
		if m.name == name {
			return true
		}
	}
	return false
}

// mediaOf returns the input's media, in field order; a Media with neither
// Data nor URL, or no MIMEType, is refused before any request.
func (f *Fn[In, Out]) mediaOf(in In) ([]llm.Media, error) {
	if len(f.media) == 0 {
		return nil, nil
	}
	v := reflect.ValueOf(in)
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil, nil
		}
		v = v.Elem()
	}
	var out []llm.Media
	add := func(name string, m Media) error {
		if m.MIMEType == "" || (len(m.Data) == 0 && m.URL == "") {
			return fmt.Errorf("%w: %s: input %s: a Media needs a MIMEType and its Data or a URL", ErrStratum, f.name, name)
		}
		out = append(out, llm.Media{MIMEType: m.MIMEType, Data: m.Data, URL: m.URL})
		return nil
	}
	for _, mf := range f.media {
		fv := v.FieldByName(mf.goName)
		var err error
		switch x := fv.Interface().(type) {
		case Media:
			err = add(mf.name, x)
		case *Media:
			if x != nil {
				err = add(mf.name, *x)
			}
		case []Media:
			for i, m := range x {
				if err = add(fmt.Sprintf("%s[%d]", mf.name, i), m); err != nil {
					break
				}
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// traceInputs are the inputs as the trace keeps them: a media field's
// bytes summarised ({"mime_type", "bytes"} or its URL), never copied.
func (f *Fn[In, Out]) traceInputs(raw map[string]any) any {
	if len(f.media) == 0 || raw == nil {
		return raw
	}
	out := maps.Clone(raw)
	for _, mf := range f.media {
		if v, ok := out[mf.name]; ok && v != nil {
			out[mf.name] = summarizeMedia(v)
		}
	}
	return out
}

func summarizeMedia(v any) any {
	switch x := v.(type) {
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = summarizeMedia(e)
		}
		return s
	case map[string]any:
		m := map[string]any{"mime_type": x["mime_type"]}
		if u, ok := x["url"]; ok {
			m["url"] = u
		}
		if d, ok := x["data"].(string); ok {
			m["bytes"] = len(d) * 3 / 4 // the base64 text's decoded size, about
		}
		return m
	}
	return v
}
