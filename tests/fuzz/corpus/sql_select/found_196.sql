SELECT  +d /fl FROM t WHERE a > 1 OR s LIKE '
a%'