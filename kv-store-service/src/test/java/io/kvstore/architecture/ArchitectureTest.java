package io.kvstore.architecture;

import static com.tngtech.archunit.base.DescribedPredicate.not;
import static com.tngtech.archunit.core.domain.JavaClass.Predicates.simpleName;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The shape of the code base, checked on every build: packages form a tree, modules depend only
 * downwards (service -> tier-engine -> native-ffm), and the service uses the engine through its narrow
 * API (the {@code TierEngine} facade, records and typed exceptions), never the catalog's or the
 * policies' internals. The test runs in the service module because only its classpath holds all three.
 */
class ArchitectureTest {

    private static JavaClasses kvstore;

    @BeforeAll
    static void importClasses() {
        kvstore = new ClassFileImporter()
                .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("io.kvstore");
    }

    @Test
    void packagesFormNoCycle() {
        slices().matching("io.kvstore.(**)").should().beFreeOfCycles().check(kvstore);
    }

    @Test
    void nativeBindingsDependOnNothingAbove() {
        noClasses()
                .that()
                .resideInAPackage("io.kvstore.ffm..")
                .should()
                .dependOnClassesThat()
                .resideOutsideOfPackages("io.kvstore.ffm..", "java..", "org.slf4j..", "org.jspecify..")
                .check(kvstore);
    }

    @Test
    void tierEngineDependsOnNeitherServiceNorSpring() {
        noClasses()
                .that()
                .resideOutsideOfPackages("io.kvstore.service..", "io.kvstore.ffm..")
                .should()
                .dependOnClassesThat()
                .resideInAnyPackage("io.kvstore.service..", "org.springframework..")
                .check(kvstore);
    }

    @Test
    void tiersDoNotDependOnTheTransferLayer() {
        noClasses()
                .that()
                .resideInAPackage("io.kvstore.tier..")
                .should()
                .dependOnClassesThat()
                .resideInAPackage("io.kvstore.transfer..")
                .check(kvstore);
    }

    @Test
    void serviceUsesTheEngineThroughItsApiOnly() {
        DescribedPredicate<JavaClass> engineInternals = JavaClass.Predicates.resideInAPackage("io.kvstore.catalog..")
                .and(not(simpleName("LookupResult")))
                .or(JavaClass.Predicates.resideInAPackage("io.kvstore.eviction..")
                        .and(not(simpleName("EvictionPolicyKind"))))
                .as("engine internals (catalog entries, policies)");
        noClasses()
                .that()
                .resideInAPackage("io.kvstore.service..")
                .should()
                .dependOnClassesThat(engineInternals)
                .check(kvstore);
    }

    @Test
    void onlyTheWiringBuildsTiers() {
        noClasses()
                .that()
                .resideInAPackage("io.kvstore.service..")
                .and()
                .resideOutsideOfPackages("io.kvstore.service.engine..", "io.kvstore.service.transport..")
                .should()
                .dependOnClassesThat()
                .resideInAnyPackage("io.kvstore.tier.memory..", "io.kvstore.tier.nvme..")
                .check(kvstore);
    }
}
