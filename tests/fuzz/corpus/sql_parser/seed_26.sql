-- a comment
SELECT /* inline */ 1;;
;