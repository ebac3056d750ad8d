package store_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/svc-code/svc-code/services/analytics/internal/schema"
	"github.com/svc-code/svc-code/services/analytics/internal/store"
	"github.com/svc-code/svc-code/services/analytics/internal/storetest"
)

// TestGrant: the role gets SELECT on exactly schema.Tables, nothing more;
// a missing role is skipped.
func TestGrant(t *testing.T) {
	db, _ := storetest.MustDB(t)
	ctx := context.Background()
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	role := "t_grant_" + hex.EncodeToString(suffix)
	if _, err := db.Exec(ctx, `CREATE ROLE `+role+` NOLOGIN`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = db.Exec(context.Background(), `DROP OWNED BY `+role)
		_, _ = db.Exec(context.Background(), `DROP ROLE `+role)
	})
	if ok, err := store.Grant(ctx, db, role); err != nil || !ok {
		t.Fatalf("Grant = %v, %v", ok, err)
	}
	if ok, err := store.Grant(ctx, db, role); err != nil || !ok { // again: harmless
		t.Fatalf("second Grant = %v, %v", ok, err)
	}
	for _, tab := range schema.Tables {
		var sel, ins, upd, del bool
		err := db.QueryRow(ctx, `SELECT has_table_privilege($1, $2::regclass, 'SELECT'), has_table_privilege($1, $2::regclass, 'INSERT'),
			has_table_privilege($1, $2::regclass, 'UPDATE'), has_table_privilege($1, $2::regclass, 'DELETE')`, role, tab).Scan(&sel, &ins, &upd, &del)
		if err != nil {
			t.Fatal(err)
		}
		if !sel || ins || upd || del {
			t.Errorf("%s: select %v insert %v update %v delete %v, want SELECT only", tab, sel, ins, upd, del)
		}
	}
	var extra int
	err := db.QueryRow(ctx, `SELECT count(*) FROM information_schema.role_table_grants
		WHERE grantee = $1 AND table_schema = current_schema() AND NOT (table_name = ANY($2))`, role, schema.Tables).Scan(&extra)
	if err != nil {
		t.Fatal(err)
	}
	if extra != 0 {
		t.Errorf("%d grants on tables outside schema.Tables (schema_migrations?)", extra)
	}
	if ok, err := store.Grant(ctx, db, role+"_missing"); err != nil || ok {
		t.Errorf("Grant to a missing role = %v, %v; want skipped", ok, err)
	}
}
