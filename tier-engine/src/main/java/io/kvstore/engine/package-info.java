/** See the package classes. */
@NullMarked
package io.kvstore.engine;

import org.jspecify.annotations.NullMarked;
