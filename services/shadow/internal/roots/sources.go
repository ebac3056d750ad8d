package roots

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/svc-code/svc-code/services/shadow/internal/project"
)

// ExtraDirsKey is the app_settings row (chat's table) of the server
// setting extra_dirs: a JSON array of absolute paths, extra allowed roots.
const ExtraDirsKey = "config/extra_dirs"

// Querier is the part of a pgx pool the sources use.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// undefinedTable is PostgreSQL's code for a missing table: chat creates
// sessions and app_settings, and may not have started yet.
const undefinedTable = "42P01"

// ProjectLister lists the known projects: every project with a journal
// and every session's working directory (project.Store).
type ProjectLister interface {
	List(ctx context.Context) ([]project.Listed, error)
}

// Projects is a Source listing the path of every known project, the
// working directory of every session chat knows included.
func Projects(l ProjectLister) Source {
	return func(ctx context.Context) ([]string, error) {
		list, err := l.List(ctx)
		if err != nil {
			return nil, fmt.Errorf("list projects: %w", err)
		}
		out := make([]string, 0, len(list))
		for _, p := range list {
			out = append(out, p.Path)
		}
		return out, nil
	}
}

// CacheTTL is how long Default's resolver keeps the roots it listed.
const CacheTTL = 2 * time.Second

// Default is the production resolver: the home directory, every known
// project and session directory (chat's sessions in db, the projects
// under dataHome), the extra_dirs setting and extraDirs
// (SHADOW_EXTRA_DIRS), listed again at most every CacheTTL. Add
// OnError(LogTo(log)) to hear about a failing source.
func Default(dataHome, home string, db *pgxpool.Pool, extraDirs string) *Resolver {
	store := project.NewStore(dataHome, project.PGSessions{Pool: db})
	return New(CacheTTL, Static(home), Projects(store), ExtraDirs(db, extraDirs))
}

// LogTo is an OnError handler that logs a failing source as a warning.
func LogTo(log *slog.Logger) func(ctx context.Context, err error) {
	return func(ctx context.Context, err error) {
		log.WarnContext(ctx, "allowed roots: a source failed, its last list stands in", "err", err)
	}
}

// ExtraDirs is a Source listing the directories of env (the
// colon-separated SHADOW_EXTRA_DIRS) and of the server setting extra_dirs
// (chat's app_settings, a JSON array of absolute paths) when it is set.
// db may be nil (env only).
func ExtraDirs(db Querier, env string) Source {
	fromEnv := SplitList(env)
	return func(ctx context.Context) ([]string, error) {
		dirs := append([]string(nil), fromEnv...)
		if db == nil {
			return dirs, nil
		}
		raws, err := queryStrings(ctx, db, `SELECT value::text FROM app_settings WHERE key = $1`, ExtraDirsKey)
		if err != nil {
			return nil, err
		}
		for _, raw := range raws {
			var list []string
			if err := json.Unmarshal([]byte(raw), &list); err != nil {
				// A malformed setting allows nothing more; it does not
				// stop the file routes.
				continue
			}
			dirs = append(dirs, list...)
		}
		return dirs, nil
	}
}

// SplitList splits a colon-separated list of directories, dropping empty
// and relative entries.
func SplitList(s string) []string {
	var out []string
	for _, d := range filepath.SplitList(s) {
		if d != "" && filepath.IsAbs(d) {
			out = append(out, d)
		}
	}
	return out
}

// queryStrings runs a query of one text column; a missing table yields nothing.
func queryStrings(ctx context.Context, db Querier, sql string, args ...any) ([]string, error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return missingTable(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return missingTable(err)
	}
	return out, nil
}

func missingTable(err error) ([]string, error) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == undefinedTable {
		return nil, nil
	}
	return nil, fmt.Errorf("list allowed roots: %w", err)
}
