/* planted: a public header in no layer's list */
