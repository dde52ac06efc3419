package wpconfig_test

import (
	"fmt"

	"github.com/queuety/queuety-go/internal/wpconfig"
)

func ExampleParse() {
	src := []byte(`<?php
// ** Database settings ** //
define( 'DB_NAME', 'wordpress' );
define( 'DB_USER', 'wp' );
define( 'DB_PASSWORD', 'p@ss:w/rd' );
// define( 'DB_HOST', 'localhost' );
define( 'DB_HOST', '[::1]:3307' );

$table_prefix = 'blog_';
`)
	cfg, err := wpconfig.Parse(src)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Host, cfg.Port, cfg.TablePrefix)
	fmt.Println(cfg.DSN())
	// Output:
	// ::1 3307 blog_
	// wp:p@ss:w/rd@tcp([::1]:3307)/wordpress?prefix=blog_
}
