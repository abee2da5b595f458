call SYS.tier ( 't' );
CALL sys.tier('shop.orders')