/** See the package classes. */
@NullMarked
package io.kvstore.concurrent;

import org.jspecify.annotations.NullMarked;
