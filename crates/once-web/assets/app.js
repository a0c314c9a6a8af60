// The window page: filled in by the page's own module.
"use strict";
