package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/queuety/queuety-go/store/driver"
)

// This file holds the row operations of Queuety's webhooks and artifacts
// tables.

func scanWebhook(sc scanner) (*driver.Webhook, error) {
	w := &driver.Webhook{}
	if err := sc.Scan(&w.ID, &w.Event, &w.URL, nullTime{&w.CreatedAt}, nullString{&w.Secret}); err != nil {
		return nil, fmt.Errorf("scan webhook: %w", err)
	}
	w.Signed = w.Secret != ""
	return w, nil
}

// WebhookInsert implements driver.Tx. It first deletes the secrets of
// webhooks that no longer exist (Queuety PHP removes webhook rows without
// knowing of the secrets), so a secret never outlives its webhook for
// long.
func (t *txn) WebhookInsert(ctx context.Context, w *driver.Webhook) error {
	ids, err := t.insert(ctx, "INSERT INTO "+t.s.T.Webhooks+" (event, url, created_at) VALUES (?, ?, ?)", 1, w.Event, w.URL, t.sec(w.CreatedAt))
	if err != nil {
		return fmt.Errorf("insert webhook: %w", err)
	}
	w.ID = ids[0]
	if _, err := t.tx.ExecContext(ctx, "DELETE FROM "+t.s.T.WebhookSecrets+" WHERE webhook_id NOT IN (SELECT id FROM "+t.s.T.Webhooks+")"); err != nil {
		return fmt.Errorf("insert webhook: delete orphaned secrets: %w", err)
	}
	if w.Secret != "" {
		if _, err := t.tx.ExecContext(ctx, "INSERT INTO "+t.s.T.WebhookSecrets+" (webhook_id, secret, created_at) VALUES (?, ?, ?)",
			w.ID, w.Secret, t.frac(w.CreatedAt)); err != nil {
			return fmt.Errorf("insert webhook %d: store its secret: %w", w.ID, err)
		}
	}
	w.Signed = w.Secret != ""
	return nil
}

// WebhookList implements driver.Tx: one event's webhooks through
// idx_event, or all of them, each with its secret.
func (t *txn) WebhookList(ctx context.Context, event string) ([]*driver.Webhook, error) {
	return webhookList(ctx, t.s, t.tx.QueryContext, event)
}

// WebhookListRead implements driver.WebhookReader: WebhookList as one
// statement on the pool, outside a transaction.
func (s *Store) WebhookListRead(ctx context.Context, event string) ([]*driver.Webhook, error) {
	return webhookList(ctx, s, s.DB.QueryContext, event)
}

// webhookList lists the webhooks of event (all when ""), with their
// secrets, through query.
func webhookList(ctx context.Context, s *Store, query func(context.Context, string, ...any) (*sql.Rows, error), event string) ([]*driver.Webhook, error) {
	q := "SELECT w.id, w.event, w.url, w.created_at, s.secret FROM " + s.T.Webhooks + " w LEFT JOIN " + s.T.WebhookSecrets +
		" s ON s.webhook_id = w.id"
	var args []any
	if event != "" {
		q += " WHERE w.event = ?"
		args = append(args, event)
	}
	out, err := queryAllWith(ctx, query, scanWebhook, q+" ORDER BY w.id", args...)
	if err != nil {
		return nil, fmt.Errorf("list webhooks: %w", err)
	}
	return out, nil
}

// WebhookSetSecret implements driver.Tx. The webhook row is read with a
// lock, so a concurrent delete cannot leave a secret behind it.
func (t *txn) WebhookSetSecret(ctx context.Context, id int64, secret string, at time.Time) (bool, error) {
	var one int
	err := t.tx.QueryRowContext(ctx, "SELECT 1 FROM "+t.s.T.Webhooks+" WHERE id = ?"+t.s.D.ForUpdate, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("set secret of webhook %d: %w", id, err)
	}
	_, err = t.tx.ExecContext(ctx, "INSERT INTO "+t.s.T.WebhookSecrets+" (webhook_id, secret, created_at) VALUES (?, ?, ?)"+
		t.s.D.Upsert([]string{"webhook_id"}, []string{"secret", "created_at"}), id, secret, t.frac(at))
	if err != nil {
		return false, fmt.Errorf("set secret of webhook %d: %w", id, err)
	}
	return true, nil
}

// WebhookDelete implements driver.Tx.
func (t *txn) WebhookDelete(ctx context.Context, id int64) (bool, error) {
	if _, err := t.tx.ExecContext(ctx, "DELETE FROM "+t.s.T.WebhookSecrets+" WHERE webhook_id = ?", id); err != nil {
		return false, fmt.Errorf("delete secret of webhook %d: %w", id, err)
	}
	return t.deleted(t.tx.ExecContext(ctx, "DELETE FROM "+t.s.T.Webhooks+" WHERE id = ?", id))
}

// deleted reports whether a DELETE removed a row.
func (t *txn) deleted(res sql.Result, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

const artifactCols = "id, workflow_id, artifact_key, kind, content, metadata, step_index, created_at, updated_at"

// artifactColsNoContent selects NULL in place of the content.
const artifactColsNoContent = "id, workflow_id, artifact_key, kind, NULL, metadata, step_index, created_at, updated_at"

func scanArtifact(sc scanner) (*driver.Artifact, error) {
	a := &driver.Artifact{}
	err := sc.Scan(&a.ID, &a.WorkflowID, &a.Key, &a.Kind, nullBytes{&a.Content}, nullBytes{&a.Metadata}, nullIntPtr{&a.StepIndex},
		nullTime{&a.CreatedAt}, nullTime{&a.UpdatedAt})
	if err != nil {
		return nil, fmt.Errorf("scan artifact: %w", err)
	}
	return a, nil
}

// ArtifactPut implements driver.Tx as Queuety's ArtifactStore::put does:
// one INSERT that updates the row with the same (workflow_id,
// artifact_key) instead (Dialect.Upsert). On MySQL the statement is
// Queuety's INSERT ... ON DUPLICATE KEY UPDATE, so it also uses up an
// AUTO_INCREMENT value when it updates, and later ids match PHP's. It does
// not set a.ID.
func (t *txn) ArtifactPut(ctx context.Context, a *driver.Artifact) error {
	q := "INSERT INTO " + t.s.T.Artifacts + " (workflow_id, artifact_key, kind, content, metadata, step_index, created_at, updated_at) " +
		"VALUES (" + placeholders(8) + ")" +
		t.s.D.Upsert([]string{"workflow_id", "artifact_key"}, []string{"kind", "content", "metadata", "step_index", "updated_at"})
	_, err := t.tx.ExecContext(ctx, q, a.WorkflowID, a.Key, a.Kind, string(a.Content), nullText(a.Metadata), nullIntp(a.StepIndex),
		t.sec(a.CreatedAt), t.sec(a.UpdatedAt))
	if err != nil {
		return fmt.Errorf("put artifact %q of workflow %d: %w", a.Key, a.WorkflowID, err)
	}
	return nil
}

// ArtifactGet implements driver.Tx.
func (t *txn) ArtifactGet(ctx context.Context, workflowID int64, key string) (*driver.Artifact, error) {
	a, err := scanArtifact(t.tx.QueryRowContext(ctx, "SELECT "+artifactCols+" FROM "+t.s.T.Artifacts+
		" WHERE workflow_id = ? AND artifact_key = ? LIMIT 1", workflowID, key))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("artifact %q of workflow %d: %w", key, workflowID, driver.ErrNotFound)
	}
	return a, err
}

// ArtifactList implements driver.Tx.
func (t *txn) ArtifactList(ctx context.Context, workflowID int64, withContent bool) ([]*driver.Artifact, error) {
	cols := artifactColsNoContent
	if withContent {
		cols = artifactCols
	}
	out, err := queryAll(ctx, t.tx, scanArtifact, "SELECT "+cols+" FROM "+t.s.T.Artifacts+" WHERE workflow_id = ? ORDER BY artifact_key", workflowID)
	if err != nil {
		return nil, fmt.Errorf("list artifacts of workflow %d: %w", workflowID, err)
	}
	return out, nil
}

// ArtifactDelete implements driver.Tx.
func (t *txn) ArtifactDelete(ctx context.Context, workflowID int64, key string) (bool, error) {
	return t.deleted(t.tx.ExecContext(ctx, "DELETE FROM "+t.s.T.Artifacts+" WHERE workflow_id = ? AND artifact_key = ?", workflowID, key))
}
