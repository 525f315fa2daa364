/** See the package classes. */
@NullMarked
package io.kvstore.catalog;

import org.jspecify.annotations.NullMarked;
