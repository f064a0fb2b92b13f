package posthorn

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func unique(prefix string) string { return prefix + "-" + newIdempotencyKey()[4:16] }

func utcToday() Date { return DateOf(time.Now().UTC()) }

func TestAProjectFromCreationToDeletion(t *testing.T) {
	op, base := operatorClient(t), env(t, "POSTHORN_TEST_URL")
	uid := unique("go-customer")
	project, err := op.Projects.Create(ctx, ProjectParams{
		Name: "Go customer", UID: uid, Plan: "business",
		Limits:         &LimitOverrides{Endpoints: 5, ConcurrentErasures: 2},
		FrameAncestors: []string{"https://app.example.com"},
		Brand:          &BrandIn{Name: "Acme", Accent: "#4f46e5"},
	})
	ok(t, err)
	if project.UID == nil || *project.UID != uid || project.Name != "Go customer" || project.Plan != "business" ||
		project.Limits.Endpoints != 5 || project.Limits.ConcurrentErasures != 2 ||
		!reflect.DeepEqual(project.FrameAncestors, []string{"https://app.example.com"}) ||
		!reflect.DeepEqual(project.Brand, Brand{Name: String("Acme"), Accent: String("#4f46e5")}) || project.CreatedAt.IsZero() {
		t.Fatalf("%+v", project)
	}

	// Found by the operator's own id; an unknown one finds nothing.
	found, err := op.Projects.Find(ctx, uid)
	ok(t, err)
	got, err := op.Projects.Get(ctx, project.ID)
	ok(t, err)
	nobody, err := op.Projects.Find(ctx, unique("go-nobody"))
	ok(t, err)
	if !reflect.DeepEqual(found, project) || !reflect.DeepEqual(got, project) || nobody != nil {
		t.Fatalf("found %+v, got %+v, nobody %+v", found, got, nobody)
	}

	// Updated: only the fields given change; brand and frame_ancestors are replaced whole.
	changed, err := op.Projects.Update(ctx, project.ID, ProjectParams{
		Name:           "Go customer, renamed",
		FrameAncestors: []string{"https://portal.example.com", "http://localhost:8080"},
		Brand:          &BrandIn{Accent: "#112233", LogoURL: "https://cdn.example.com/logo.png"},
	})
	ok(t, err)
	if changed.Name != "Go customer, renamed" ||
		!reflect.DeepEqual(changed.FrameAncestors, []string{"https://portal.example.com", "http://localhost:8080"}) ||
		!reflect.DeepEqual(changed.Brand, Brand{Accent: String("#112233"), LogoURL: String("https://cdn.example.com/logo.png")}) ||
		*changed.UID != uid || changed.Plan != "business" || changed.Limits != project.Limits {
		t.Fatalf("%+v", changed)
	}

	// A second project with the same uid conflicts; a wildcard is not an origin.
	_, err = op.Projects.Create(ctx, ProjectParams{Name: "Go duplicate", UID: uid})
	wantAPIError(t, err, 409, "conflict")
	_, err = op.Projects.Update(ctx, project.ID, ProjectParams{FrameAncestors: []string{"https://*.example.com"}})
	if e := wantAPIError(t, err, 422, "invalid"); !strings.Contains(e.Message, "frame_ancestors") {
		t.Fatal(e.Message)
	}
	_, err = op.Projects.Create(ctx, ProjectParams{Name: unique("go-bad"), FrameAncestors: []string{"https://*.example.com"}})
	wantAPIError(t, err, 422, "invalid")
	// An empty list is sent, and lets no site frame the portal.
	cleared, err := op.Projects.Update(ctx, project.ID, ProjectParams{FrameAncestors: []string{}})
	ok(t, err)
	if len(cleared.FrameAncestors) != 0 || cleared.Name != changed.Name {
		t.Fatalf("%+v", cleared)
	}

	// A key minted for the project opens the public API, until it is revoked.
	today := utcToday()
	key, err := op.APIKeys.Create(ctx, project.ID, "go production")
	ok(t, err)
	if key.Name != "go production" || !strings.HasPrefix(key.Key, key.Prefix) || !strings.HasPrefix(key.Key, "phk_") {
		t.Fatalf("%+v", key)
	}
	public := NewClient(key.Key, WithBaseURL(base))
	hook, err := public.Webhooks.Create(ctx, WebhookCreate{URL: "https://example.com/operator-go", Events: []string{"order.paid"}})
	ok(t, err)
	sent, err := public.Events.Send(ctx, "order.paid", map[string]any{"order": 1}, nil)
	ok(t, err)
	hooks, err := public.Webhooks.List(ctx)
	ok(t, err)
	if sent.Deliveries != 1 || len(hooks) != 1 || hooks[0].ID != hook.ID {
		t.Fatalf("%+v %+v", sent, hooks)
	}
	ok(t, op.APIKeys.Revoke(ctx, project.ID, key.ID))
	_, err = public.Events.Send(ctx, "order.paid", map[string]any{"order": 2}, nil)
	wantAPIError(t, err, 401, "unauthorized")
	ok(t, op.APIKeys.Revoke(ctx, project.ID, key.ID)) // a repeat (as after a lost answer) is harmless
	wantAPIError(t, op.APIKeys.Revoke(ctx, project.ID, key.ID+1_000_000_000), 404, "not_found")

	// Usage counts the event on its UTC day.
	usage, err := op.Usage.Get(ctx, project.ID, today, utcToday())
	ok(t, err)
	if usage.ProjectID != project.ID || usage.Since != today || usage.Until != utcToday() || usage.Events != 1 ||
		len(usage.Days) != 1 || usage.Days[0].Day != today || usage.Days[0].Events != 1 {
		t.Fatalf("%+v", usage)
	}
	defaults, err := op.Usage.Get(ctx, project.ID, Date{}, Date{}) // the last 30 days
	ok(t, err)
	if defaults.Until != utcToday() || defaults.Events != 1 {
		t.Fatalf("%+v", defaults)
	}

	// A portal link, single-use, expiring when asked.
	before := time.Now()
	link, err := op.PortalLinks.Create(ctx, project.ID, PortalLinkParams{
		UserID: "user-7", Role: "member", Email: "ana@example.com", Name: "Ana", ExpiresIn: 10 * time.Minute})
	ok(t, err)
	if !strings.HasPrefix(link.URL, base+"/portal/") || link.ExpiresAt.Before(before.Add(590*time.Second)) ||
		link.ExpiresAt.After(before.Add(610*time.Second)) {
		t.Fatalf("%+v", link)
	}
	viewer, err := op.PortalLinks.Create(ctx, project.ID, PortalLinkParams{UserID: "user-8", Role: "viewer"})
	ok(t, err)
	if !strings.Contains(viewer.URL, "/portal/") || viewer.URL == link.URL {
		t.Fatalf("%+v", viewer)
	}
	_, err = op.PortalLinks.Create(ctx, project.ID, PortalLinkParams{UserID: "user-9", Role: "admin"})
	wantAPIError(t, err, 422, "invalid")

	// Deleted: gone at once, and so is everything under it.
	ok(t, op.Projects.Delete(ctx, project.ID))
	_, err = op.Projects.Get(ctx, project.ID)
	wantAPIError(t, err, 404, "not_found")
	wantAPIError(t, op.Projects.Delete(ctx, project.ID), 404, "not_found")
	_, err = op.Usage.Get(ctx, project.ID, Date{}, Date{})
	wantAPIError(t, err, 404, "not_found")
	gone, err := op.Projects.Find(ctx, uid)
	if err != nil || gone != nil {
		t.Fatal(gone, err)
	}
}

func TestTheListPagesThroughEveryProjectOnce(t *testing.T) {
	op := operatorClient(t)
	var created []int64
	for i := 0; i < 3; i++ {
		p, err := op.Projects.Create(ctx, ProjectParams{Name: unique("go-page")})
		ok(t, err)
		created = append(created, p.ID)
		defer op.Projects.Delete(ctx, p.ID)
	}
	first, err := op.Projects.List(ctx, ProjectListParams{Limit: 2})
	ok(t, err)
	if len(first.Data) != 2 || !first.HasMore || first.NextCursor == "" {
		t.Fatalf("%+v", first)
	}
	second, err := op.Projects.List(ctx, ProjectListParams{Limit: 2, Cursor: first.NextCursor})
	ok(t, err)
	for _, a := range first.Data {
		for _, b := range second.Data {
			if a.ID == b.ID {
				t.Fatalf("project %d on two pages", a.ID)
			}
		}
	}

	it := op.Projects.Iter(ctx, ProjectListParams{Limit: 2})
	all, err := it.All()
	ok(t, err)
	seen, ours := map[int64]bool{}, []int64{}
	for _, p := range all {
		if seen[p.ID] {
			t.Fatalf("project %d twice", p.ID)
		}
		seen[p.ID] = true
		for _, id := range created {
			if p.ID == id {
				ours = append(ours, id)
			}
		}
	}
	if !reflect.DeepEqual(ours, created) || it.Cursor() == "" {
		t.Fatalf("ours in order %v, made %v", ours, created)
	}
	// The cursor resumes after the last one read.
	rest, err := op.Projects.Iter(ctx, ProjectListParams{Cursor: it.Cursor(), Limit: 2}).All()
	ok(t, err)
	for _, p := range rest {
		for _, id := range created {
			if p.ID == id {
				t.Fatalf("project %d seen again", id)
			}
		}
	}
	_, err = op.Projects.List(ctx, ProjectListParams{Limit: -1})
	wantAPIError(t, err, 422, "invalid")
}

func TestAWrongOperatorKeyIsRefused(t *testing.T) {
	base := env(t, "POSTHORN_TEST_URL")
	// A project's API key is not one either; nor is an operator key one of the public API.
	for _, key := range []string{"pho_" + strings.Repeat("x", 43), env(t, "POSTHORN_TEST_KEY_BUSINESS")} {
		_, err := NewOperator(key, WithBaseURL(base)).Projects.List(ctx, ProjectListParams{})
		wantAPIError(t, err, 401, "unauthorized")
	}
	_, err := NewClient(env(t, "POSTHORN_OPERATOR_KEY"), WithBaseURL(base)).Webhooks.List(ctx)
	wantAPIError(t, err, 401, "unauthorized")
}
