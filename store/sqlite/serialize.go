package sqlite

import (
	"context"
	"errors"
	"fmt"
)

// serializer is the part of modernc.org/sqlite's connection that copies a
// whole database in and out (sqlite3_serialize, sqlite3_deserialize).
type serializer interface {
	Serialize() ([]byte, error)
	Deserialize([]byte) error
}

// Serialize returns the whole database as the bytes of a database file
// (sqlite3_serialize), for Deserialize to load into another store. It is
// meant for in-memory databases: package queuetytest migrates one
// database per process and gives every test a copy, since copying takes
// microseconds and migrating takes far longer.
func (s *Store) Serialize(ctx context.Context) ([]byte, error) {
	var out []byte
	err := s.raw(ctx, func(c serializer) (err error) { out, err = c.Serialize(); return err })
	if err != nil {
		return nil, fmt.Errorf("serialize sqlite %s: %w", s.cfg.Path, err)
	}
	return out, nil
}

// Deserialize replaces the whole database with b, bytes from Serialize
// (sqlite3_deserialize). Only an in-memory store can load one: its single
// connection then holds a private copy of b. Nothing may use the store
// while it runs. Open such a store with queuety.SkipMigrate, since b
// brings its own schema and migration record.
func (s *Store) Deserialize(ctx context.Context, b []byte) error {
	if s.cfg.Path != ":memory:" {
		return fmt.Errorf("deserialize sqlite %s: only an in-memory database can be replaced", s.cfg.Path)
	}
	if err := s.raw(ctx, func(c serializer) error { return c.Deserialize(b) }); err != nil {
		return fmt.Errorf("deserialize sqlite: %w", err)
	}
	return nil
}

// raw calls fn with the store's connection.
func (s *Store) raw(ctx context.Context, fn func(serializer) error) error {
	conn, err := s.DB.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		c, ok := dc.(serializer)
		if !ok {
			return errors.New("the sqlite driver cannot serialize")
		}
		return fn(c)
	})
}
