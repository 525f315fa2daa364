/** See the package classes. */
@NullMarked
package io.kvstore.block;

import org.jspecify.annotations.NullMarked;
