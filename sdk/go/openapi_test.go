package posthorn

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// The client's models and operations, checked against the live OpenAPI documents.

type doc map[string]any

// fetchDoc reads an OpenAPI document, waiting out a 429 (calls without a key are
// limited per address, and every suite's requests come from 127.0.0.1).
func fetchDoc(t *testing.T, path string) doc {
	url := env(t, "POSTHORN_TEST_URL") + path
	for try := 0; ; try++ {
		resp, err := http.Get(url)
		ok(t, err)
		var d doc
		err = json.NewDecoder(resp.Body).Decode(&d)
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests && try < 3 {
			wait, _ := ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
			time.Sleep(wait + time.Second)
			continue
		}
		if resp.StatusCode != 200 || err != nil {
			t.Fatalf("%s: %d %v", path, resp.StatusCode, err)
		}
		return d
	}
}

func obj(v any) map[string]any { m, _ := v.(map[string]any); return m }

// resolve follows $ref to the named schema.
func (d doc) resolve(schema map[string]any) map[string]any {
	for schema["$ref"] != nil {
		schema = obj(obj(obj(d["components"])["schemas"])[refName(schema)])
	}
	return schema
}

func refName(schema map[string]any) string {
	ref, _ := schema["$ref"].(string)
	return ref[strings.LastIndex(ref, "/")+1:]
}

// properties of a schema, following $ref and allOf, and which of them are required.
func (d doc) properties(schema map[string]any) (map[string]any, map[string]bool) {
	schema = d.resolve(schema)
	props, required := map[string]any{}, map[string]bool{}
	for name, p := range obj(schema["properties"]) {
		props[name] = p
	}
	for _, name := range asList(schema["required"]) {
		required[name.(string)] = true
	}
	for _, part := range asList(schema["allOf"]) {
		p, r := d.properties(obj(part))
		for k, v := range p {
			props[k] = v
		}
		for k := range r {
			required[k] = true
		}
	}
	return props, required
}

func asList(v any) []any { l, _ := v.([]any); return l }

// jsonTypes is the set of JSON types a property allows ("any" for no constraint), with
// date-time and date for strings of those formats.
func (d doc) jsonTypes(prop map[string]any) map[string]bool {
	prop = d.resolve(prop)
	out := map[string]bool{}
	if oneOf := asList(prop["oneOf"]); oneOf != nil {
		for _, p := range oneOf {
			for k := range d.jsonTypes(obj(p)) {
				out[k] = true
			}
		}
		return out
	}
	types := asList(prop["type"])
	if s, isString := prop["type"].(string); isString {
		types = []any{s}
	}
	if prop["type"] == nil {
		return map[string]bool{"any": true}
	}
	for _, ty := range types {
		name := ty.(string)
		if format, _ := prop["format"].(string); name == "string" && (format == "date-time" || format == "date") {
			name = format
		}
		out[name] = true
	}
	return out
}

// refs are the schemas a property names, directly or through oneOf.
func refs(prop map[string]any) []string {
	var out []string
	for _, p := range append([]any{prop}, asList(prop["oneOf"])...) {
		if name := refName(obj(p)); name != "" {
			out = append(out, name)
		}
	}
	return out
}

var (
	timeType = reflect.TypeOf(time.Time{})
	dateType = reflect.TypeOf(Date{})
)

// goTypes is the set of JSON types a Go field decodes; nilable says whether JSON null
// may also come (a nil slice or map) without being in the set.
func goTypes(ty reflect.Type) (types map[string]bool, nilable bool) {
	switch {
	case ty == timeType:
		return map[string]bool{"date-time": true}, false
	case ty == dateType:
		return map[string]bool{"date": true}, false
	}
	switch ty.Kind() {
	case reflect.Pointer:
		inner, _ := goTypes(ty.Elem())
		inner["null"] = true
		return inner, false
	case reflect.String:
		return map[string]bool{"string": true}, false
	case reflect.Bool:
		return map[string]bool{"boolean": true}, false
	case reflect.Int, reflect.Int64:
		return map[string]bool{"integer": true}, false
	case reflect.Slice, reflect.Array:
		return map[string]bool{"array": true}, ty.Kind() == reflect.Slice
	case reflect.Map:
		return map[string]bool{"object": true}, true
	case reflect.Struct:
		return map[string]bool{"object": true}, false
	case reflect.Interface:
		return map[string]bool{"any": true}, false
	}
	panic("no JSON type for " + ty.String())
}

// jsonFields are a struct's fields by JSON name, those of embedded structs included.
func jsonFields(ty reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := 0; i < ty.NumField(); i++ {
		f := ty.Field(i)
		if f.Anonymous {
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
			continue
		}
		out[strings.Split(f.Tag.Get("json"), ",")[0]] = f
	}
	return out
}

// modelOf is the model a field holds: itself, or what it points to or lists.
func modelOf(ty reflect.Type) reflect.Type {
	for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice {
		ty = ty.Elem()
	}
	return ty
}

func sameSet(a, b map[string]bool) bool { return reflect.DeepEqual(a, b) }

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkModels compares each model's fields with its schema: the same names, the same
// JSON types, a field that may be absent nilable, a nested model the one the schema
// names.
func checkModels(t *testing.T, d doc, models map[string]reflect.Type) {
	t.Helper()
	for name, model := range models {
		props, required := d.properties(map[string]any{"$ref": "#/components/schemas/" + name})
		fields := jsonFields(model)
		if !reflect.DeepEqual(keys(fields), keys(props)) {
			t.Errorf("%s: fields %v, schema %v", name, keys(fields), keys(props))
			continue
		}
		for field, prop := range props {
			expected := d.jsonTypes(obj(prop))
			got, nilable := goTypes(fields[field].Type)
			if !required[field] {
				expected["null"] = true // an absent field reads as nil
				if !got["null"] && !nilable {
					t.Errorf("%s.%s may be absent but cannot be nil", name, field)
				}
			}
			if nilable && expected["null"] {
				got["null"] = true
			}
			if !sameSet(got, expected) {
				t.Errorf("%s.%s: Go %v, schema %v", name, field, keys(got), keys(expected))
			}
			for _, ref := range refs(obj(prop)) {
				if want, known := models[ref]; known && modelOf(fields[field].Type) != want {
					t.Errorf("%s.%s holds %v, the schema names %s", name, field, fields[field].Type, ref)
				}
			}
		}
	}
}

func TestModelsMatchThePublicOpenAPIDocument(t *testing.T) {
	d := fetchDoc(t, "/public/v1/openapi.json")
	checkModels(t, d, map[string]reflect.Type{
		"Webhook":              reflect.TypeOf(Webhook{}),
		"ClientCertificateOut": reflect.TypeOf(ClientCertificate{}),
		"Destination":          reflect.TypeOf(Destination{}),
		"ListenSession":        reflect.TypeOf(ListenSession{}),
		"EventAccepted":        reflect.TypeOf(EventAccepted{}),
		"Event":                reflect.TypeOf(Event{}),
		"FilteredOut":          reflect.TypeOf(FilteredOut{}),
		"Delivery":             reflect.TypeOf(Delivery{}),
		"DeliveryDetail":       reflect.TypeOf(DeliveryDetail{}),
		"Replay":               reflect.TypeOf(Replay{}),
		"Erasure":              reflect.TypeOf(Erasure{}),
		"EventTypeSchema":      reflect.TypeOf(EventTypeSchema{}),
	})
	// Page{Data, HasMore, NextCursor} is the envelope {data, meta{next_cursor, has_more}}.
	for _, page := range []string{"EventPage", "DeliveryPage"} {
		props, required := d.properties(map[string]any{"$ref": "#/components/schemas/" + page})
		meta, _ := d.properties(obj(props["meta"]))
		if !reflect.DeepEqual(keys(props), []string{"data", "meta"}) || len(required) != 2 ||
			!reflect.DeepEqual(keys(meta), []string{"has_more", "next_cursor"}) {
			t.Errorf("%s: %v, meta %v", page, keys(props), keys(meta))
		}
	}
	checkOperations(t, d, "/public/v1", func(c *Client, _ *Operator) { callEveryPublicOperation(c) })
}

func TestModelsMatchTheOperatorOpenAPIDocument(t *testing.T) {
	d := fetchDoc(t, "/operator/v1/openapi.json")
	checkModels(t, d, map[string]reflect.Type{
		"Project":         reflect.TypeOf(Project{}),
		"EffectiveLimits": reflect.TypeOf(EffectiveLimits{}),
		"BrandOut":        reflect.TypeOf(Brand{}),
		"CreatedKey":      reflect.TypeOf(CreatedKey{}),
		"Usage":           reflect.TypeOf(Usage{}),
		"UsageDay":        reflect.TypeOf(UsageDay{}),
		"AttemptCounts":   reflect.TypeOf(AttemptCounts{}),
		"PortalLink":      reflect.TypeOf(PortalLink{}),
	})
	// Page{Data, HasMore, NextCursor} is the envelope {data, next_cursor, has_more}.
	listing := obj(obj(obj(obj(obj(obj(obj(d["paths"])["/projects"])["get"])["responses"])["200"])["content"])["application/json"])
	props, _ := d.properties(obj(listing["schema"]))
	if !reflect.DeepEqual(keys(props), []string{"data", "has_more", "next_cursor"}) {
		t.Errorf("the projects page: %v", keys(props))
	}
	checkOperations(t, d, "/operator/v1", func(_ *Client, op *Operator) { callEveryOperatorOperation(op) })
}

func callEveryPublicOperation(c *Client) {
	c.Webhooks.Create(ctx, WebhookCreate{})
	c.Webhooks.List(ctx)
	c.Webhooks.Get(ctx, 1)
	c.Webhooks.Update(ctx, 1, WebhookUpdate{})
	c.Webhooks.Delete(ctx, 1)
	c.Webhooks.RotateSecret(ctx, 1)
	c.Webhooks.Recover(ctx, 1, time.Now(), time.Time{})
	c.Events.Send(ctx, "a.b", nil, nil)
	c.Events.SendBatch(ctx, nil)
	c.Events.Get(ctx, "evt_1")
	c.Events.List(ctx, EventListParams{})
	c.Events.EraseData(ctx, "evt_1")
	c.Deliveries.List(ctx, DeliveryListParams{})
	c.Deliveries.Get(ctx, 1)
	c.Deliveries.Retry(ctx, 1)
	c.Replays.Get(ctx, 1)
	c.Replays.Cancel(ctx, 1)
	c.Erasures.Create(ctx, "user:1")
	c.Erasures.Get(ctx, 1)
	c.EventTypes.SetSchema(ctx, "a.b", nil)
	c.EventTypes.GetSchema(ctx, "a.b")
	c.EventTypes.DeleteSchema(ctx, "a.b")
	c.Listen.Open(ctx, ListenOpen{Forward: "http://localhost:8000/x"})
}

func callEveryOperatorOperation(op *Operator) {
	op.Projects.Create(ctx, ProjectParams{})
	op.Projects.List(ctx, ProjectListParams{})
	op.Projects.Get(ctx, 1)
	op.Projects.Update(ctx, 1, ProjectParams{})
	op.Projects.Delete(ctx, 1)
	op.APIKeys.Create(ctx, 1, "k")
	op.APIKeys.Revoke(ctx, 1, 2)
	op.Usage.Get(ctx, 1, Date{}, Date{})
	op.PortalLinks.Create(ctx, 1, PortalLinkParams{})
}

// checkOperations calls every method against a server that notes the requests, and
// checks that they are the document's operations, every one of them.
func checkOperations(t *testing.T, d doc, prefix string, callAll func(*Client, *Operator)) {
	t.Helper()
	var calls []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls = append(calls, r.Method+" "+strings.TrimPrefix(r.URL.Path, prefix))
		w.Write([]byte(`{"data": [], "meta": {"next_cursor": "c", "has_more": false}}`))
	}))
	defer srv.Close()
	callAll(NewClient("phk_x", WithBaseURL(srv.URL)), NewOperator("pho_x", WithBaseURL(srv.URL)))
	documented := map[string]*regexp.Regexp{}
	for path, item := range obj(d["paths"]) {
		segments := strings.Split(path, "/")
		for i, segment := range segments {
			if strings.HasPrefix(segment, "{") {
				segments[i] = "[^/]+"
			} else {
				segments[i] = regexp.QuoteMeta(segment)
			}
		}
		pattern := strings.Join(segments, "/")
		for method := range obj(item) {
			if method != "parameters" {
				documented[strings.ToUpper(method)+" "+path] = regexp.MustCompile("^" + strings.ToUpper(method) + " " + pattern + "$")
			}
		}
	}
	called := map[string]bool{}
	for _, c := range calls {
		matched := false
		for op, re := range documented {
			if re.MatchString(c) {
				called[op], matched = true, true
			}
		}
		if !matched {
			t.Errorf("the client calls %s, which the document does not have", c)
		}
	}
	for op := range documented {
		if !called[op] {
			t.Errorf("the document has %s, which the client does not call", op)
		}
	}
}
