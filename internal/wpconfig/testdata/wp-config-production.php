<?php
/**
 * Production configuration. Older values are kept below, commented out.
 */

// define( 'DB_NAME', 'staging_wp' );
# define( 'DB_HOST', 'old-db.internal' );
/*
define( 'DB_USER', 'old_user' );
define( 'DB_PASSWORD', 'old password' );
*/

// ** Database settings ** //
define('DB_NAME', 'shop_wp');
define("DB_USER", "shop");
define( 'DB_PASSWORD',  'Zx9#q/*not a comment*/ // "quoted" \'single\' \\back' );
define ( "DB_HOST" , "db-1.internal:3307" ) ;
define( 'DB_CHARSET', 'utf8mb4' );
define( 'DB_COLLATE', '' );

define('AUTH_KEY',         'y+`]Lq0Pq0T(8*-3kP]~H6w|y#x>3M/?bJ7[3.A^9l/#aE)c^$Hn%X,<Yq4q>Z9N');
define('SECURE_AUTH_KEY',  'v:wY-C;jc5%!^@S&*6|`{*/i5J@TM;l*P=T ~Bv|Bpv5:XK!,YAJWk!,=tK/8W#q');
define('LOGGED_IN_KEY',    'I@OW8jK-OU0?m(8]hV?LN42}W8Mx)D?#J!5R%+|.!5aw,8P4#P1R$H,gz:{#u-]n');
define('NONCE_KEY',        'r9jH)#+M+4hz2!I~^6)]*yP.n}K/E9,3N6NwTBp5.N^_?l9-,~F$TSY/&.:5lXb&');
define('AUTH_SALT',        '<-1dLg[@k:+rEy:Wlt(mzf$F)z/yDxH$M(w^~,Qq#bvx@.GW9/t]#<eNS]Fh*;U2');
define('SECURE_AUTH_SALT', 'HPd&m@/cR}(2_]KQ*-`P.q0o`Ln-eNT?R.+1/4~5y48@%[@SI)rjmT]6I__a5Zh|');
define('LOGGED_IN_SALT',   '&]/Ve~E5DDhLHjtkgf+4[Tq?(LPe,!c+y%p1O^-X#0JiB-8mIMyAb=F+J6k{)/0F');
define('NONCE_SALT',       '~vB#CIbx2<@5Gv-)j;Ju:KBNUQ!z4u*tYr|B9:[3Kz=~*t/e,9xyQz=I$h7l7pCl');

$table_prefix = "shop_";

define( 'WP_DEBUG', false );
define( 'WP_DEBUG_LOG', '/var/log/wp/debug.log' ); // keeps ' and " balanced: "'"

if ( ! defined( 'ABSPATH' ) ) {
	define( 'ABSPATH', __DIR__ . '/' );
}

require_once ABSPATH . 'wp-settings.php';
